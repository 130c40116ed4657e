/*
 * kvperf's RocksDB binding for YCSB 0.17.0 (Java), used only by the
 * side-by-side benchmarks in bench/ (see bench/ycsb-rocksdb.sh).
 *
 * YCSB publishes no RocksDB binding on Maven Central, so this is a small
 * site.ycsb.DB of our own, written to behave like YCSB 0.17.0's
 * site.ycsb.db.rocksdb.RocksDBClient where that matters for speed:
 *
 *   - property rocksdb.dir; one RocksDB instance shared by every client
 *     thread, opened by the first init() and closed by the last cleanup();
 *   - a record is ONE value holding all its fields, each field stored as
 *     [4-byte big-endian name length][name][4-byte BE value length][value]
 *     (YCSB's layout, and kvperf's: src/engine/record.rs, mod codec);
 *   - read = get + decode (keeping only the asked-for fields);
 *   - scan = seek to the start key, then `recordcount` entries in key order;
 *   - update = get the stored record, merge the new fields, put it back
 *     (YCSB's read-before-update); a missing record is NOT_FOUND;
 *   - insert = put; delete = delete.
 *
 * Deliberate differences from YCSB's binding:
 *   - All tables share the default column family. YCSB's binding creates
 *     one column family per table name; the core workloads use a single
 *     table ("usertable"), and kvperf's RocksDB engine also stores every
 *     table in the default column family, so both tools touch the same
 *     structure.
 *   - The RocksDB options are kvperf's defaults (see OPTIONS below), not
 *     YCSB's optimizeLevelStyleCompaction()/increaseParallelism() setup, so
 *     that the two tools are compared on the same engine configuration. Each
 *     option takes the property name kvperf uses (-p rocksdb.<name>=...).
 *   - The last cleanup() flushes the memtables before closing (property
 *     rocksdb.flush_on_close, default true), as kvperf's engine does on
 *     close, so the next phase of both tools starts from SST files rather
 *     than from a WAL replay. Set it to false for YCSB's plain close.
 *
 * OPTIONS (property: default) - identical to kvperf's RocksDB engine:
 *   rocksdb.block_cache_size: 33554432 (LRU, 32 MiB)
 *   rocksdb.block_size: 4096
 *   rocksdb.bloom_bits: 0 (no filter; else a full Bloom filter of n bits/key)
 *   rocksdb.compression: snappy (none|snappy|lz4|lz4hc|zstd|zlib|bzip2)
 *   rocksdb.write_buffer_size: 67108864 (64 MiB)
 *   rocksdb.max_write_buffer_number: 2
 *   rocksdb.max_background_jobs: number of cores, at least 2
 *   rocksdb.max_open_files: -1
 *   rocksdb.optimize_level_style_compaction: 0 (bytes of memtable budget;
 *       0 = not called, else optimizeLevelStyleCompaction(n) is called
 *       instead of setting write_buffer_size / max_write_buffer_number)
 *   rocksdb.wal: true
 *   rocksdb.sync: false
 *   plus create_if_missing.
 */
package kvperf.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.FlushOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;

import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

public class RocksDBClient extends DB {

  public static final String DIR_PROPERTY = "rocksdb.dir";

  // Shared by all client threads; guarded by RocksDBClient.class.
  private static RocksDB db;
  private static Options options;
  private static LRUCache blockCache;
  private static BloomFilter bloomFilter;
  private static WriteOptions writeOptions;
  private static boolean flushOnClose;
  private static int references;

  @Override
  public void init() throws DBException {
    synchronized (RocksDBClient.class) {
      if (db == null) {
        open(getProperties());
      }
      references++;
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (RocksDBClient.class) {
      if (references == 0) {
        return;
      }
      references--;
      if (references > 0) {
        return;
      }
      try {
        if (flushOnClose) {
          try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
            db.flush(flush);
          }
        }
      } catch (RocksDBException e) {
        throw new DBException("RocksDB flush failed: " + e.getMessage(), e);
      } finally {
        closeAll();
      }
    }
  }

  /**
   * {@code settle DIR [name=value ...]}: opens the store with these options,
   * waits until no flush or compaction is pending or running, and closes it,
   * so the next phase starts from a quiet store (kvperf's {@code kvperf settle}
   * does the same; run between phases, outside both tools' measurements).
   */
  public static void main(String[] args) throws Exception {
    if (args.length < 2 || !args[0].equals("settle")) {
      System.err.println("usage: RocksDBClient settle DIR [rocksdb.name=value ...]");
      System.exit(2);
    }
    Properties props = new Properties();
    props.setProperty(DIR_PROPERTY, args[1]);
    for (int i = 2; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      props.setProperty(kv[0], kv.length > 1 ? kv[1] : "");
    }
    synchronized (RocksDBClient.class) {
      open(props);
      try {
        String[] busy = {"rocksdb.mem-table-flush-pending", "rocksdb.num-running-flushes",
            "rocksdb.compaction-pending", "rocksdb.num-running-compactions"};
        while (true) {
          boolean idle = true;
          for (String property : busy) {
            idle &= db.getProperty(property).equals("0");
          }
          if (idle) {
            break;
          }
          Thread.sleep(100);
        }
      } finally {
        closeAll();
      }
    }
  }

  /** Opens the shared instance; caller holds the class lock. */
  private static void open(Properties props) throws DBException {
    String dir = props.getProperty(DIR_PROPERTY);
    if (dir == null || dir.isEmpty()) {
      throw new DBException("property " + DIR_PROPERTY + " is required (the RocksDB data directory)");
    }
    try {
      Path path = Paths.get(dir).toAbsolutePath();
      Files.createDirectories(path);

      RocksDB.loadLibrary();
      int cores = Runtime.getRuntime().availableProcessors();

      long cacheSize = longProp(props, "rocksdb.block_cache_size", 32L << 20, 0);
      long blockSize = longProp(props, "rocksdb.block_size", 4096, 1);
      long bloomBits = longProp(props, "rocksdb.bloom_bits", 0, 0);
      CompressionType compression = compression(props.getProperty("rocksdb.compression", "snappy"));
      long writeBufferSize = longProp(props, "rocksdb.write_buffer_size", 64L << 20, 1);
      long maxWriteBuffers = longProp(props, "rocksdb.max_write_buffer_number", 2, 1);
      long backgroundJobs = longProp(props, "rocksdb.max_background_jobs", Math.max(cores, 2), 1);
      long maxOpenFiles = longProp(props, "rocksdb.max_open_files", -1, -1);
      long levelStyleBudget = longProp(props, "rocksdb.optimize_level_style_compaction", 0, 0);
      boolean wal = boolProp(props, "rocksdb.wal", true);
      boolean sync = boolProp(props, "rocksdb.sync", false);
      flushOnClose = boolProp(props, "rocksdb.flush_on_close", true);

      // NewLRUCache(capacity)'s defaults, as kvperf gets them through the C API:
      // automatic shard bits, no strict limit, high-priority pool ratio 0.5.
      blockCache = new LRUCache(cacheSize, -1, false, 0.5);
      BlockBasedTableConfig table = new BlockBasedTableConfig()
          .setBlockCache(blockCache)
          .setBlockSize(blockSize);
      if (bloomBits > 0) {
        bloomFilter = new BloomFilter(bloomBits, false);
        table.setFilterPolicy(bloomFilter);
      }

      options = new Options().setCreateIfMissing(true);
      if (levelStyleBudget > 0) {
        options.optimizeLevelStyleCompaction(levelStyleBudget);
      } else {
        options.setWriteBufferSize(writeBufferSize);
        options.setMaxWriteBufferNumber(toInt("rocksdb.max_write_buffer_number", maxWriteBuffers));
      }
      options.setMaxBackgroundJobs(toInt("rocksdb.max_background_jobs", backgroundJobs));
      options.setMaxOpenFiles(toInt("rocksdb.max_open_files", maxOpenFiles));
      options.setCompressionType(compression);
      options.setTableFormatConfig(table);

      writeOptions = new WriteOptions().setSync(sync).setDisableWAL(!wal);

      db = RocksDB.open(options, path.toString());
    } catch (IOException | RocksDBException | IllegalArgumentException e) {
      closeAll();
      throw new DBException("cannot open RocksDB in '" + dir + "': " + e.getMessage(), e);
    }
  }

  private static void closeAll() {
    if (db != null) {
      db.close();
      db = null;
    }
    if (writeOptions != null) {
      writeOptions.close();
      writeOptions = null;
    }
    if (options != null) {
      options.close();
      options = null;
    }
    if (bloomFilter != null) {
      bloomFilter.close();
      bloomFilter = null;
    }
    if (blockCache != null) {
      blockCache.close();
      blockCache = null;
    }
  }

  // ---- operations ----

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      byte[] stored = db.get(bytes(key));
      if (stored == null) {
        return Status.NOT_FOUND;
      }
      return decode(stored, fields, result) ? Status.OK : corrupt(key);
    } catch (RocksDBException e) {
      return error("read", key, e);
    }
  }

  @Override
  public Status scan(String table, String startKey, int recordCount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try (RocksIterator it = db.newIterator()) {
      it.seek(bytes(startKey));
      for (int n = 0; n < recordCount && it.isValid(); n++, it.next()) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        if (!decode(it.value(), fields, row)) {
          return corrupt(new String(it.key(), StandardCharsets.UTF_8));
        }
        result.add(row);
      }
      it.status();
      return Status.OK;
    } catch (RocksDBException e) {
      return error("scan", startKey, e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      byte[] k = bytes(key);
      byte[] stored = db.get(k);
      if (stored == null) {
        return Status.NOT_FOUND;
      }
      // Keep the stored field order; new values replace old ones, new names go last.
      Map<String, ByteIterator> merged = new LinkedHashMap<>();
      if (!decode(stored, null, merged)) {
        return corrupt(key);
      }
      merged.putAll(values);
      db.put(writeOptions, k, encode(merged));
      return Status.OK;
    } catch (RocksDBException e) {
      return error("update", key, e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      db.put(writeOptions, bytes(key), encode(values));
      return Status.OK;
    } catch (RocksDBException e) {
      return error("insert", key, e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      db.delete(writeOptions, bytes(key));
      return Status.OK;
    } catch (RocksDBException e) {
      return error("delete", key, e);
    }
  }

  // ---- record layout: per field [u32 BE len][name][u32 BE len][value] ----

  static byte[] encode(Map<String, ByteIterator> values) {
    int n = values.size();
    byte[][] names = new byte[n][];
    byte[][] data = new byte[n][];
    int size = 0;
    int i = 0;
    for (Map.Entry<String, ByteIterator> field : values.entrySet()) {
      names[i] = bytes(field.getKey());
      data[i] = field.getValue().toArray();
      size += 8 + names[i].length + data[i].length;
      i++;
    }
    byte[] out = new byte[size];
    int at = 0;
    for (i = 0; i < n; i++) {
      at = putChunk(out, at, names[i]);
      at = putChunk(out, at, data[i]);
    }
    return out;
  }

  private static int putChunk(byte[] out, int at, byte[] chunk) {
    int len = chunk.length;
    out[at] = (byte) (len >>> 24);
    out[at + 1] = (byte) (len >>> 16);
    out[at + 2] = (byte) (len >>> 8);
    out[at + 3] = (byte) len;
    System.arraycopy(chunk, 0, out, at + 4, len);
    return at + 4 + len;
  }

  /**
   * Adds the fields of {@code stored} (all, or those in {@code wanted}) to
   * {@code out}; the values share {@code stored}'s bytes. False if malformed.
   */
  static boolean decode(byte[] stored, Set<String> wanted, Map<String, ByteIterator> out) {
    int at = 0;
    while (at < stored.length) {
      int nameLen = lengthAt(stored, at);
      if (nameLen < 0) {
        return false;
      }
      int nameAt = at + 4;
      int valueLen = lengthAt(stored, nameAt + nameLen);
      if (valueLen < 0) {
        return false;
      }
      int valueAt = nameAt + nameLen + 4;
      String name = new String(stored, nameAt, nameLen, StandardCharsets.UTF_8);
      if (wanted == null || wanted.contains(name)) {
        out.put(name, new ByteArrayByteIterator(stored, valueAt, valueLen));
      }
      at = valueAt + valueLen;
    }
    return true;
  }

  /** The length prefix at {@code at}, or -1 if it or its chunk overruns the array. */
  private static int lengthAt(byte[] b, int at) {
    if (at < 0 || at > b.length - 4) {
      return -1;
    }
    int len = ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
    return (len < 0 || len > b.length - at - 4) ? -1 : len;
  }

  // ---- helpers ----

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static Status error(String op, String key, RocksDBException e) {
    System.err.println("RocksDBClient: " + op + " '" + key + "' failed: " + e.getMessage());
    return Status.ERROR;
  }

  private static Status corrupt(String key) {
    System.err.println("RocksDBClient: stored value of '" + key + "' is not a YCSB record");
    return Status.ERROR;
  }

  private static long longProp(Properties props, String name, long dflt, long min) throws DBException {
    String text = props.getProperty(name);
    if (text == null) {
      return dflt;
    }
    long v;
    try {
      v = Long.parseLong(text.trim().replace("_", ""));
    } catch (NumberFormatException e) {
      throw new DBException("property " + name + ": '" + text + "' is not an integer");
    }
    if (v < min) {
      throw new DBException("property " + name + ": " + v + " is below the minimum " + min);
    }
    return v;
  }

  private static int toInt(String name, long v) throws DBException {
    if (v > Integer.MAX_VALUE) {
      throw new DBException("property " + name + ": " + v + " is too large");
    }
    return (int) v;
  }

  /** Strict like kvperf: anything but true/false (any case) is an error. */
  private static boolean boolProp(Properties props, String name, boolean dflt) throws DBException {
    String text = props.getProperty(name);
    if (text == null) {
      return dflt;
    }
    if (text.trim().equalsIgnoreCase("true")) {
      return true;
    }
    if (text.trim().equalsIgnoreCase("false")) {
      return false;
    }
    throw new DBException("property " + name + ": '" + text + "' is not true or false");
  }

  private static CompressionType compression(String name) throws DBException {
    switch (name.trim()) {
      case "none":
        return CompressionType.NO_COMPRESSION;
      case "snappy":
        return CompressionType.SNAPPY_COMPRESSION;
      case "lz4":
        return CompressionType.LZ4_COMPRESSION;
      case "lz4hc":
        return CompressionType.LZ4HC_COMPRESSION;
      case "zstd":
        return CompressionType.ZSTD_COMPRESSION;
      case "zlib":
        return CompressionType.ZLIB_COMPRESSION;
      case "bzip2":
      case "bz2":
        return CompressionType.BZLIB2_COMPRESSION;
      default:
        throw new DBException("property rocksdb.compression: unknown '" + name
            + "'; use none, snappy, lz4, lz4hc, zstd, zlib or bzip2");
    }
  }
}
