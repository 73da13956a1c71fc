// The one translation unit of the consumer that compiles the session's definitions (the executor,
// the plan compiler, the JSON strategy reader) for the MPI backend; consumer.cpp includes only
// <autosync/session.hpp>.
#include <autosync/exec/mpi/backend.hpp>
#include <autosync/session_impl.hpp>

template class autosync::session<autosync::exec::mpi_backend>;
