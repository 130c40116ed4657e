// RocksDB's query trace of a kvperf run (`-p rocksdb.trace=FILE`).
//
// The release library kvperf links (10.4.2) has DB::StartTrace/EndTrace
// only as C++: its C API has no rocksdb_start_trace. This shim calls them
// on the DB behind a column-family handle the Rust binding gives
// (`AsColumnFamilyRef::inner`); the binding keeps its rocksdb_t private.
//
// Unavoidable layouts, both of the same 10.4.2 sources as the library:
// - db/c.cc's `struct rocksdb_column_family_handle_t { ColumnFamilyHandle*
//   rep; bool immortal; }`, not in c.h: only `rep` is read;
// - db/column_family.h's ColumnFamilyHandleImpl, whose virtual db() gives
//   the DBImpl (a DB, its only base) the handle belongs to.
// Compiled with the library's std::string ABI (_GLIBCXX_USE_CXX11_ABI=0,
// build.rs) since NewFileTraceWriter takes a std::string.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "db/column_family.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/trace_reader_writer.h"

using ROCKSDB_NAMESPACE::ColumnFamilyHandleImpl;
using ROCKSDB_NAMESPACE::DB;
using ROCKSDB_NAMESPACE::Status;

extern "C" {
struct rocksdb_column_family_handle_t {
  ROCKSDB_NAMESPACE::ColumnFamilyHandle* rep;
  bool immortal;
};
}

static DB* db_of(rocksdb_column_family_handle_t* cf) {
  auto* impl = static_cast<ColumnFamilyHandleImpl*>(cf->rep);
  // DBImpl derives from DB alone: the same address.
  return reinterpret_cast<DB*>(impl->db());
}

static char* error_text(const Status& s) {
  return strdup(s.ToString().c_str());
}

// Starts tracing every query of the DB to `path` (at most `max_bytes`, 0:
// RocksDB's default of 64 GiB). NULL, or the error (free with free()).
extern "C" char* kvperf_rocksdb_start_trace(rocksdb_column_family_handle_t* cf,
                                            const char* path,
                                            uint64_t max_bytes) {
  DB* db = db_of(cf);
  std::unique_ptr<ROCKSDB_NAMESPACE::TraceWriter> writer;
  Status s = ROCKSDB_NAMESPACE::NewFileTraceWriter(
      db->GetEnv(), ROCKSDB_NAMESPACE::EnvOptions(), std::string(path),
      &writer);
  if (!s.ok()) return error_text(s);
  ROCKSDB_NAMESPACE::TraceOptions options;
  if (max_bytes > 0) options.max_trace_file_size = max_bytes;
  s = db->StartTrace(options, std::move(writer));
  return s.ok() ? nullptr : error_text(s);
}

// Ends the trace (writes its footer and closes the file).
extern "C" char* kvperf_rocksdb_end_trace(rocksdb_column_family_handle_t* cf) {
  Status s = db_of(cf)->EndTrace();
  return s.ok() ? nullptr : error_text(s);
}
