// autosync/compressors/all.hpp — the built-in family of registered compressors, all at once:
// int8 (int8.hpp), qsgd, nuqsgd, alq and amq (qsgd.hpp), topk (topk.hpp), randomk (randomk.hpp) and
// powersgd (powersgd.hpp), and Accordion over three of them (accordion.hpp). Including a header registers its compressors (static
// initialization), so a strategy file may name them and the search may propose them
// (only with allow_lossy, within search::options' lossy budget).
#pragma once

#include <autosync/compressors/accordion.hpp>
#include <autosync/compressors/int8.hpp>
#include <autosync/compressors/powersgd.hpp>
#include <autosync/compressors/qsgd.hpp>
#include <autosync/compressors/randomk.hpp>
#include <autosync/compressors/topk.hpp>
