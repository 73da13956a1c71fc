// The layouts nccl-tests prints, read by cost::nccl_tests::parse (text) and io/nccl_tests_json.hpp
// (the JSON report of -J): the table's columns follow its header line (before 2.13 only the
// leading columns a collective has; -I 1 per-iteration columns, -S 1 timestamps, -C 1 cputime,
// in-place-only rows), a section starts with the default layout, launcher prefixes (mpirun,
// MPICH, srun) are dropped, the units line starts no section, and a malformed input is an
// error naming its line or field. The rows below are written with nccl-tests 2.19's printf
// formats (src/util.cu).
#include <autosync/cost/nccl_tests_log.hpp>
#include <autosync/io/nccl_tests_json.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace autosync;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("autosync_nccl_formats_" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

}  // namespace

TEST_CASE("nccl-tests text: per-iteration columns (-I 1) and timestamps (-S 1) follow the header line") {
  const std::string text =
      "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n"
      "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows \n"
      "#\n"
      "#                                                              out-of-place (+ per-iteration)                                "
      "in-place (+ per-iteration)\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%"
      "     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)"
      "     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)   %Y-%m-%d %H:%M:%S\n"
      "     1048576        262144     float     sum      -1    78.77   13.31   23.29       0    75.10    90.02    88.40     3.21"
      "    81.31   12.90   22.57       0    77.00    95.50    93.10     4.02  2025-11-03 12:00:01\n"
      "  1073741824     268435456     float     sum      -1   8160.7  131.58  230.26       0   8150.0   8199.9   8190.1     0.12"
      "   8158.3  131.61  230.32       0   8149.0   8170.2   8168.0     0.10  2025-11-03 12:00:02\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 126.6 \n";
  const auto l = cost::nccl_tests::parse(text);
  REQUIRE(l.rows() == 2);
  const auto& r = l.sections[0].rows;
  CHECK(l.sections[0].title.empty());  // the units line "(B) (elements) ..." is not a section title
  CHECK(r[0].bytes == 1048576);
  CHECK(r[0].count == 262144);
  CHECK(r[0].root == -1);
  CHECK(r[0].time_us == doctest::Approx(78.77));
  CHECK(r[0].busbw == doctest::Approx(23.29));
  CHECK(r[0].in_place_time_us == doctest::Approx(81.31));  // not the out-of-place i_min
  CHECK(r[0].in_place_busbw == doctest::Approx(22.57));
  CHECK(r[1].time_us == doctest::Approx(8160.7));
  CHECK(r[1].in_place_algbw == doctest::Approx(131.61));

  // a row that does not match its header names its line and the header's count
  const std::string short_row = text.substr(0, text.find("     1048576")) +
                                "     1048576        262144     float     sum      -1    78.77   13.31   23.29       0    81.31   12.90   22.57       0\n";
  try {
    (void)cost::nccl_tests::parse(short_row);
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.field() == "line 7");
    CHECK(std::string(e.what()).find("as the header on line 5 says") != std::string::npos);
    CHECK(std::string(e.what()).find("expected 23 columns") != std::string::npos);
  }
}

TEST_CASE("nccl-tests text: cputime, in-place-only rows, srun labels, sections") {
  // -C 1 names the time column "cputime"; a trace-replay row leaves the out-of-place block blank
  const std::string cpu =
      "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  #wrong\n"
      "        8192          2048     float     sum      -1    20.50    0.40    0.70       0    21.00    0.39    0.68       0\n"
      "       16384          4096     float     sum      -1                                       22.25    0.74    1.29     N/A\n";
  const auto c = cost::nccl_tests::parse(cpu);
  REQUIRE(c.rows() == 2);
  CHECK(c.sections[0].rows[0].time_us == doctest::Approx(20.5));
  CHECK(c.sections[0].rows[0].in_place_time_us == doctest::Approx(21.0));
  CHECK(c.sections[0].rows[1].time_us == doctest::Approx(22.25));  // in-place figures stand for the row
  CHECK(c.sections[0].rows[1].in_place_time_us == doctest::Approx(22.25));
  CHECK(c.sections[0].rows[1].busbw == doctest::Approx(1.29));

  // srun --label prefixes, two sections each with its header and units line
  const std::string srun =
      "0: # (A) one node\n"
      "0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "0:         1024           256     float     sum      -1    12.50    0.08    0.14      0    12.00    0.09    0.15      0\n"
      "0: # (B) two nodes\n"
      "0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "12:        2048           512     float     sum      -1    30.00    0.07    0.13      0    29.00    0.07    0.13      0\n";
  const auto s = cost::nccl_tests::parse(srun);
  REQUIRE(s.sections.size() == 2);
  CHECK(s.sections[0].title == "(A) one node");
  CHECK(s.sections[1].title == "(B) two nodes");
  CHECK(s.sections[1].rows[0].bytes == 2048);
  CHECK(s.sections[1].rows[0].time_us == doctest::Approx(30.0));
}

TEST_CASE("nccl-tests text before 2.13: each collective's leading columns; a section starts with the default layout") {
  // all_gather printed no redop and no root (11 columns), broadcast its root where redop stands
  const std::string gather =
      "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "     1048576        262144   float    41.50   25.27   22.11  0e+00    40.90   25.64   22.43  0e+00\n";
  const auto g = cost::nccl_tests::parse(gather);
  REQUIRE(g.rows() == 1);
  CHECK(g.sections[0].rows[0].redop.empty());
  CHECK(g.sections[0].rows[0].root == -1);
  CHECK(g.sections[0].rows[0].time_us == doctest::Approx(41.5));
  CHECK(g.sections[0].rows[0].in_place_time_us == doctest::Approx(40.9));
  const std::string bcast =
      "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "     1048576        262144   float       0    30.10   34.84   34.84  0e+00    29.80   35.19   35.19  0e+00\n";
  const auto b = cost::nccl_tests::parse(bcast);
  REQUIRE(b.rows() == 1);
  CHECK(b.sections[0].rows[0].root == 0);
  CHECK(b.sections[0].rows[0].redop.empty());
  CHECK(b.sections[0].rows[0].busbw == doctest::Approx(34.84));

  // a curated file: a 2.19 section, then a section pasted from an older log without its header
  const std::string curated =
      "# (A) new\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong           timestamp\n"
      "        1024           256     float     sum       2    12.50    0.08    0.14      0    12.00    0.09    0.15      0  2025-11-03 12:00:01\n"
      "# (B) old\n"
      "        2048           512     float     sum    30.00    0.07    0.13  1e-07    29.00    0.07    0.13  1e-07\n";
  const auto c = cost::nccl_tests::parse(curated);
  REQUIRE(c.sections.size() == 2);
  CHECK(c.sections[0].rows[0].root == 2);
  CHECK(c.sections[1].rows[0].time_us == doctest::Approx(30.0));
  CHECK(c.sections[1].rows[0].root == -1);

  // MPICH's -prepend-rank prefix
  const auto m = cost::nccl_tests::parse("[0]         1024           256     float     sum      -1    12.50    0.08    0.14      0    12.00    0.09    0.15      0\n");
  REQUIRE(m.rows() == 1);
  CHECK(m.sections[0].rows[0].in_place_time_us == doctest::Approx(12.0));

  // a zero in-place time is an error, as in a JSON report
  CHECK_THROWS_WITH_AS((void)cost::nccl_tests::parse("1024 256 float sum -1 12.5 0.08 0.14 0 0.00 0.08 0.14 0\n"),
                       doctest::Contains("in-place time must be positive"), error);
}

TEST_CASE("nccl-tests JSON report (-J): rows, the machine's shape, and errors that name the field") {
  const std::string report = R"({
  "version": 3,
  "nccl_version": 22809,
  "config": {"nthreads": 1, "ngpus": 1, "iterations": 20,
             "devices": [{"rank": 0, "hostname": "node-a", "device": 0, "device_info": "NVIDIA H100 80GB HBM3"},
                         {"rank": 1, "hostname": "node-a", "device": 1, "device_info": "NVIDIA H100 80GB HBM3"},
                         {"rank": 2, "hostname": "node-b", "device": 0, "device_info": "NVIDIA H100 80GB HBM3"},
                         {"rank": 3, "hostname": "node-b", "device": 1, "device_info": "NVIDIA H100 80GB HBM3"}]},
  "results": [
    {"size": 1048576, "count": 262144, "type": "float", "redop": "sum", "root": "     3",
     "out_of_place": {"time": 78.77, "alg_bw": 13.31, "bus_bw": 23.29, "nwrong": 0},
     "in_place": {"time": 81.31, "alg_bw": 12.9, "bus_bw": 22.57, "nwrong": null},
     "out_of_place_per_iter": {"min_us": 75.1, "times_us": [75.1, 80.2]},
     "actual_iterations": 20, "experiment_name": ""},
    {"size": 2147483648, "count": 536870912, "type": "float", "redop": "sum", "root": "    -1",
     "out_of_place": null,
     "in_place": {"cpu_time": 16192.5, "alg_bw": 132.63, "bus_bw": 232.1, "nwrong": 0}}
  ],
  "out_of_bounds": {"count": 0, "okay": true}
})";
  io::nccl_tests_shape shape;
  const auto l = io::parse_nccl_tests_json(report, "report.json", &shape);
  REQUIRE(l.rows() == 2);
  const auto& r = l.sections[0].rows;
  CHECK(r[0].bytes == 1048576);
  CHECK(r[0].root == 3);  // the padded string "     3"
  CHECK(r[0].time_us == doctest::Approx(78.77));
  CHECK(r[0].in_place_time_us == doctest::Approx(81.31));
  CHECK(r[1].bytes == 2147483648LL);
  CHECK(r[1].time_us == doctest::Approx(16192.5));  // out_of_place null: the in-place figures
  CHECK(r[1].busbw == doctest::Approx(232.1));
  CHECK(shape.hosts == 2);
  CHECK(shape.ranks == 4);
  CHECK(l.hw == "NVIDIA H100 80GB HBM3");

  // load_nccl_tests reads either form from a file; the text loader points a JSON report there
  const auto path = write_temp("report.json", report);
  CHECK(io::load_nccl_tests(path).rows() == 2);
  CHECK_THROWS_WITH_AS((void)cost::nccl_tests::load(path), doctest::Contains("io::load_nccl_tests"), error);
  const auto text_path = write_temp("log.txt", "        1024           256     float     sum      -1    12.50    0.08    0.14      0    12.00    0.09    0.15      0\n");
  io::nccl_tests_shape none{7, 7};
  CHECK(io::load_nccl_tests(text_path, &none).rows() == 1);
  CHECK(none.hosts == 0);
  CHECK(none.ranks == 0);
  std::filesystem::remove(path);
  std::filesystem::remove(text_path);

  // errors name the file, the line and the field
  auto fails = [](const std::string& text, const std::string& field, int line) {
    try {
      (void)io::parse_nccl_tests_json(text, "r.json");
      FAIL("expected an error for " << field);
    } catch (const file_error& e) {
      CHECK(e.field() == field);
      CHECK(e.line() == line);
    }
  };
  fails("{\"results\": [{\"size\": 8, \"count\": 2,\n \"out_of_place\": {\"time\": -1, \"alg_bw\": 0, \"bus_bw\": 0}}]}", "results[0].out_of_place.time", 2);
  fails("{\"results\": [{\"size\": \"8\", \"count\": 2, \"in_place\": {\"time\": 1, \"alg_bw\": 0, \"bus_bw\": 0}}]}", "results[0].size", 1);
  fails("{\"results\": [{\"size\": 8, \"count\": 2}]}", "results[0]", 1);
  fails("{\"config\": {}}", "results", 1);
  fails("{\"results\": [{\"size\": 8, \"count\": 2, \"root\": \"x\", \"in_place\": {\"time\": 1, \"alg_bw\": 0, \"bus_bw\": 0}}]}",
        "results[0].root", 1);
  fails("{\"results\": [{\"size\": 8, \"count\": 2, \"in_place\": {\"time\": 0, \"alg_bw\": 0, \"bus_bw\": 0}}]}", "results[0].in_place.time",
        1);
  CHECK_THROWS_AS((void)io::parse_nccl_tests_json("{\"results\": [", "r.json"), file_error);  // truncated
  // what is no measurement: wrong results, a time of 1000 s or more, a size over 1 TiB, a device entry that is no object
  fails("{\"results\": [{\"size\": 8, \"count\": 2, \"in_place\": {\"time\": 1, \"alg_bw\": 0, \"bus_bw\": 0, \"nwrong\": 7}}]}",
        "results[0].in_place.nwrong", 1);
  fails("{\"results\": [{\"size\": 8, \"count\": 2, \"in_place\": {\"time\": 1e300, \"alg_bw\": 0, \"bus_bw\": 0}}]}",
        "results[0].in_place.time", 1);
  fails("{\"results\": [{\"size\": 4611686018427387904, \"count\": 2, \"in_place\": {\"time\": 1, \"alg_bw\": 0, \"bus_bw\": 0}}]}",
        "results[0].size", 1);
  fails("{\"config\": {\"devices\": [null]}, \"results\": [{\"size\": 8, \"count\": 2, \"in_place\": {\"time\": 1, \"alg_bw\": 0, \"bus_bw\": 0}}]}",
        "config.devices[0]", 1);
  // nwrong -1 or a string: not checked, as nccl-tests writes it with -c 0
  CHECK(io::parse_nccl_tests_json("{\"results\": [{\"size\": 8, \"count\": 2, \"in_place\": {\"time\": 1, \"alg_bw\": 0, \"bus_bw\": 0, "
                                  "\"nwrong\": -1}}]}", "r.json").rows() == 1);
}

TEST_CASE("nccl-tests text: rows that are no measurement name their line") {
  const std::string head = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  auto fails = [&](const std::string& row, const std::string& says) {
    CHECK_THROWS_WITH_AS((void)cost::nccl_tests::parse(head + row), doctest::Contains(says.c_str()), error);
  };
  fails("        1024           256     float     sum      -1    12.50    0.08    0.14      3    12.00    0.09    0.15      0\n",
        "'line 2': #wrong is 3: nccl-tests found wrong results");
  fails("        1024           256     float     sum      -1    12.50    0.08    0.14      0    12.00    0.09    0.15      1\n",
        "'line 2': #wrong is 1");
  fails("        1024           256     float     sum      -1    2e9    0.08    0.14      0    12.00    0.09    0.15      0\n",
        "'line 2': a time of 2e9 us is 1000 s or more");
  fails("        1024           256     float     sum      -1    12.50    0.08    0.14      0    1e-300    0.09    0.15      0\n",
        "'line 2': a time of 1e-300 us is under 1 ns");
  fails("  2199023255553   549755813888     float     sum      -1    12.50    0.08    0.14      0    12.00    0.09    0.15      0\n",
        "'line 2': size 2199023255553 bytes is over 1 TiB");
  // N/A (no check) is no count; before 2.13 the column is the largest error, a float
  CHECK(cost::nccl_tests::parse(head + "        1024           256     float     sum      -1    12.50    0.08    0.14    N/A    12.00    0.09    0.15    N/A\n")
            .rows() == 1);
  const std::string old = "#       size         count      type   redop    root     time   algbw   busbw  error     time   algbw   busbw  error\n";
  CHECK(cost::nccl_tests::parse(old + "        1024           256     float     sum      -1    12.50    0.08    0.14  1e-07    12.00    0.09    0.15  2e-07\n")
            .rows() == 1);
}

TEST_CASE("nccl-tests parser: older 12-column logs and mpirun tags") {
  const std::string text =
      "[1,0]<stdout>:#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "[1,0]<stdout>:           8             2   float     sum    179.1    0.00    0.00  2e-07    176.3    0.00    0.00  1e-07\n"
      "[1,0]<stdout>:  4294967296    1073741824   float     sum   183834   23.36   43.81  5e-07   184216   23.31   43.72  5e-07\n";
  const auto l = cost::nccl_tests::parse(text);
  REQUIRE(l.rows() == 2);
  const auto& r = l.sections[0].rows;
  CHECK(r[0].bytes == 8);
  CHECK(r[0].time_us == doctest::Approx(179.1));
  CHECK(r[0].root == -1);
  CHECK(r[1].busbw == doctest::Approx(43.81));
  CHECK(r[1].in_place_time_us == doctest::Approx(184216));
  CHECK_THROWS_AS((void)cost::nccl_tests::parse("8 2 float sum 1 2 3 4 5 6 7\n"), error);  // 11 columns
}
