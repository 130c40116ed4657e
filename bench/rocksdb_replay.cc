// RocksDB's own replayer of a query trace, as db_bench's
// `-benchmarks=replay` runs it (tools/db_bench_tool.cc, Benchmark::Replay:
// NewFileTraceReader, DB::NewDefaultReplayer with the column family
// handles, Prepare, Replay(ReplayOptions(threads, fast_forward))), without
// db_bench's flags: for bench/rocksdb-replayer.sh where no db_bench is
// built. Linked to the RocksDB release library kvperf links, compiled
// against the same release's headers with its std::string ABI (as
// csrc/rocksdb_trace_shim.cc).
//
//   rocksdb_replay DB_DIR TRACE_FILE
//
// Opens DB_DIR (it must exist) with kvperf's RocksDB defaults and
// statistics on, replays TRACE_FILE with one thread as fast as it goes,
// and prints db_bench's lines for it: "replay : ... <seconds> seconds",
// "Replay completed from trace_file: ..." and the statistics.

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/options.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"
#include "rocksdb/trace_reader_writer.h"
#include "rocksdb/utilities/replayer.h"

using namespace ROCKSDB_NAMESPACE;

static int fail(const char* what, const Status& s) {
  std::fprintf(stderr, "rocksdb_replay: %s: %s\n", what, s.ToString().c_str());
  return 3;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: rocksdb_replay DB_DIR TRACE_FILE\n");
    return 2;
  }
  const std::string dir = argv[1], trace = argv[2];
  // kvperf's RocksDB defaults (src/engine/embedded/rocksdb.rs).
  Options options;
  options.create_if_missing = false;
  options.write_buffer_size = 64 << 20;
  options.max_write_buffer_number = 2;
  options.max_background_jobs = 2;
  options.max_open_files = -1;
  options.compression = kSnappyCompression;
  options.statistics = CreateDBStatistics();
  BlockBasedTableOptions table;
  table.block_cache = NewLRUCache(32 << 20);
  table.block_size = 4096;
  table.format_version = 7;
  options.table_factory.reset(NewBlockBasedTableFactory(table));

  std::vector<ColumnFamilyDescriptor> families = {
      ColumnFamilyDescriptor(kDefaultColumnFamilyName, ColumnFamilyOptions(options))};
  std::vector<ColumnFamilyHandle*> handles;
  DB* db = nullptr;
  Status s = DB::Open(DBOptions(options), dir, families, &handles, &db);
  if (!s.ok()) return fail("open", s);

  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<TraceReader> reader;
  s = NewFileTraceReader(Env::Default(), EnvOptions(), trace, &reader);
  if (!s.ok()) return fail("trace reader", s);
  std::unique_ptr<Replayer> replayer;
  s = db->NewDefaultReplayer(handles, std::move(reader), &replayer);
  if (!s.ok()) return fail("replayer", s);
  s = replayer->Prepare();
  if (!s.ok()) return fail("prepare", s);
  // db_bench's -trace_replay_threads=1 -trace_replay_fast_forward=1e9.
  s = replayer->Replay(ReplayOptions(1, 1e9), nullptr);
  replayer.reset();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) return fail("replay", s);
  std::printf("replay       : %11.3f micros/op 0 ops/sec %.3f seconds 1 operations;\n",
              seconds * 1e6, seconds);
  std::printf("Replay completed from trace_file: %s\n", trace.c_str());
  std::printf("STATISTICS:\n%s", options.statistics->ToString().c_str());
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  s = db->Close();
  delete db;
  return s.ok() ? 0 : fail("close", s);
}
