/*
 * kvperf's Cassandra binding for YCSB 0.17.0 (Java), used only by
 * bench/servers-vs-native.sh as the Cassandra-side reference tool.
 *
 * Why it exists: the comparison wants the server's own load tool, and
 * cassandra-stress is not published to Maven Central (neither as
 * org.apache.cassandra:cassandra-stress nor inside cassandra-all, which has
 * no stress classes); YCSB's own cassandra-cql binding is not on Maven
 * Central either (only site.ycsb:core is). So this is a small site.ycsb.DB
 * of our own, written to behave like YCSB 0.17.0's
 * site.ycsb.db.CassandraCQLClient, on the Java driver cassandra-stress 5.0
 * itself uses: org.apache.cassandra:cassandra-driver-core 3.12.1 (shaded),
 * taken from the same cassandra-all jars the server runs from.
 *
 * Behaviour, as YCSB's binding:
 *   - properties hosts (required, comma-separated), port (9042),
 *     cassandra.keyspace (ycsb), cassandra.readconsistencylevel and
 *     cassandra.writeconsistencylevel, cassandra.maxconnections and
 *     cassandra.coreconnections (per host, LOCAL distance),
 *     cassandra.connecttimeoutmillis, cassandra.readtimeoutmillis;
 *   - ONE Cluster and ONE Session shared by every client thread (the
 *     driver's default pool: one connection per host with protocol v4+,
 *     many requests in flight on it), opened by the first init() and closed
 *     by the last cleanup();
 *   - statements prepared on first use, one per field set, with the
 *     operation's consistency level, run synchronously (session.execute);
 *   - read = SELECT * (or the fields) FROM table WHERE y_id = ? LIMIT 1,
 *     NOT_FOUND when no row; scan = ... WHERE token(y_id) >= token(?) LIMIT ?;
 *     update = UPDATE table SET f = ?, ... WHERE y_id = ? (an upsert);
 *     insert = INSERT INTO table (y_id, f, ...) VALUES (?, ...);
 *     delete = DELETE FROM table WHERE y_id = ?; values are varchar strings.
 *
 * Deliberate differences:
 *   - consistency levels default to ONE (kvperf's default; YCSB's binding
 *     has used ONE and QUORUM in different releases: on the single-node,
 *     RF=1 keyspace of the benchmark both mean one replica);
 *   - a read copies exactly the column's bytes (YCSB's binding wraps
 *     ByteBuffer.array(), the whole backing array);
 *   - the first failure of each operation type is printed on stderr with
 *     its cause (the driver logs through slf4j, which has no backend here);
 *   - the first cleanup() prints on stderr the line
 *     "kvperf.bench.CassandraCQLClient: window_s=<seconds>": the time from
 *     the session being open to the first thread's cleanup. YCSB's own
 *     RunTime also counts connecting (init) and closing the driver (about
 *     2 s of netty shutdown), which kvperf's and pgbench's figures leave out,
 *     so bench/servers-vs-native.sh divides YCSB's operations by this window.
 * The schema is kvperf's cassandra engine's (YCSB's): keyspace ycsb, table
 * usertable (y_id varchar PRIMARY KEY, field0 varchar, ...), made by
 * `kvperf load --engine cassandra`; this binding creates nothing.
 */
package kvperf.bench;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ColumnDefinitions;
import com.datastax.driver.core.ConsistencyLevel;
import com.datastax.driver.core.HostDistance;
import com.datastax.driver.core.PreparedStatement;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;

import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

public class CassandraCQLClient extends DB {

  private static final String KEY = "y_id";

  // Shared by all client threads; guarded by CassandraCQLClient.class.
  private static Cluster cluster;
  private static Session session;
  private static int references;
  private static long openedAt;
  private static boolean windowReported;
  private static ConsistencyLevel readConsistency;
  private static ConsistencyLevel writeConsistency;

  /** Prepared statements by kind and field set ("read:*", "update:field3", ...). */
  private static final ConcurrentMap<String, PreparedStatement> STATEMENTS = new ConcurrentHashMap<>();
  private static final Set<String> REPORTED = ConcurrentHashMap.newKeySet();

  @Override
  public void init() throws DBException {
    synchronized (CassandraCQLClient.class) {
      if (session == null) {
        open(getProperties());
      }
      references++;
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (CassandraCQLClient.class) {
      if (references == 0) {
        return;
      }
      if (!windowReported && openedAt != 0) {
        windowReported = true;
        System.err.printf("kvperf.bench.CassandraCQLClient: window_s=%.3f%n", (System.nanoTime() - openedAt) / 1e9);
      }
      references--;
      if (references == 0) {
        closeAll();
      }
    }
  }

  private static void open(Properties p) throws DBException {
    String hosts = p.getProperty("hosts");
    if (hosts == null || hosts.isEmpty()) {
      throw new DBException("property hosts is required (e.g. -p hosts=127.0.0.1)");
    }
    try {
      int port = Integer.parseInt(p.getProperty("port", "9042"));
      String keyspace = p.getProperty("cassandra.keyspace", "ycsb");
      readConsistency = ConsistencyLevel.valueOf(
          p.getProperty("cassandra.readconsistencylevel", "ONE").toUpperCase());
      writeConsistency = ConsistencyLevel.valueOf(
          p.getProperty("cassandra.writeconsistencylevel", "ONE").toUpperCase());
      cluster = Cluster.builder().withPort(port).addContactPoints(hosts.split(",")).build();
      String v = p.getProperty("cassandra.maxconnections");
      if (v != null) {
        cluster.getConfiguration().getPoolingOptions()
            .setMaxConnectionsPerHost(HostDistance.LOCAL, Integer.parseInt(v));
      }
      v = p.getProperty("cassandra.coreconnections");
      if (v != null) {
        cluster.getConfiguration().getPoolingOptions()
            .setCoreConnectionsPerHost(HostDistance.LOCAL, Integer.parseInt(v));
      }
      v = p.getProperty("cassandra.connecttimeoutmillis");
      if (v != null) {
        cluster.getConfiguration().getSocketOptions().setConnectTimeoutMillis(Integer.parseInt(v));
      }
      v = p.getProperty("cassandra.readtimeoutmillis");
      if (v != null) {
        cluster.getConfiguration().getSocketOptions().setReadTimeoutMillis(Integer.parseInt(v));
      }
      session = cluster.connect(keyspace);
      openedAt = System.nanoTime();
    } catch (RuntimeException e) {
      closeAll();
      throw new DBException("cannot connect to Cassandra at " + hosts + ": " + e, e);
    }
  }

  private static void closeAll() {
    STATEMENTS.clear();
    if (session != null) {
      session.close();
      session = null;
    }
    if (cluster != null) {
      cluster.close();
      cluster = null;
    }
  }

  /** The statement of `kind` over `fields` (sorted; "*" for all), prepared once. */
  private static PreparedStatement statement(String kind, String table, Set<String> fields) {
    List<String> cols = fields == null ? null : new ArrayList<>(new TreeSet<>(fields));
    String name = kind + ":" + table + ":" + (cols == null ? "*" : String.join(",", cols));
    PreparedStatement stmt = STATEMENTS.get(name);
    if (stmt != null) {
      return stmt;
    }
    String select = cols == null ? "*" : quoted(cols);
    String cql;
    ConsistencyLevel cl = writeConsistency;
    switch (kind) {
    case "read":
      cql = "SELECT " + select + " FROM " + table + " WHERE " + KEY + " = ? LIMIT 1";
      cl = readConsistency;
      break;
    case "scan":
      cql = "SELECT " + select + " FROM " + table + " WHERE token(" + KEY + ") >= token(?) LIMIT ?";
      cl = readConsistency;
      break;
    case "update": {
      StringBuilder set = new StringBuilder();
      for (String c : cols) {
        set.append(set.length() == 0 ? "" : ", ").append('"').append(c).append("\" = ?");
      }
      cql = "UPDATE " + table + " SET " + set + " WHERE " + KEY + " = ?";
      break;
    }
    case "insert": {
      StringBuilder marks = new StringBuilder("?");
      for (int i = 0; i < cols.size(); i++) {
        marks.append(", ?");
      }
      cql = "INSERT INTO " + table + " (" + KEY + ", " + quoted(cols) + ") VALUES (" + marks + ")";
      break;
    }
    case "delete":
      cql = "DELETE FROM " + table + " WHERE " + KEY + " = ?";
      break;
    default:
      throw new IllegalArgumentException(kind);
    }
    stmt = session.prepare(cql);
    stmt.setConsistencyLevel(cl);
    PreparedStatement previous = STATEMENTS.putIfAbsent(name, stmt);
    return previous != null ? previous : stmt;
  }

  private static String quoted(List<String> cols) {
    StringBuilder s = new StringBuilder();
    for (String c : cols) {
      s.append(s.length() == 0 ? "" : ", ").append('"').append(c).append('"');
    }
    return s.toString();
  }

  private static Status failed(String op, Exception e) {
    if (REPORTED.add(op)) {
      System.err.println("kvperf.bench.CassandraCQLClient: first " + op + " failure: " + e);
    }
    return Status.ERROR;
  }

  private static HashMap<String, ByteIterator> fields(Row row, Map<String, ByteIterator> into) {
    HashMap<String, ByteIterator> out = into == null ? new HashMap<>() : null;
    Map<String, ByteIterator> target = into == null ? out : into;
    for (ColumnDefinitions.Definition def : row.getColumnDefinitions()) {
      ByteBuffer val = row.getBytesUnsafe(def.getName());
      if (val == null) {
        target.put(def.getName(), null);
      } else {
        byte[] bytes = new byte[val.remaining()];
        val.duplicate().get(bytes);
        target.put(def.getName(), new ByteArrayByteIterator(bytes));
      }
    }
    return out;
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      ResultSet rs = session.execute(statement("read", table, fields).bind(key));
      Row row = rs.one();
      if (row == null) {
        return Status.NOT_FOUND;
      }
      fields(row, result);
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("read", e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      ResultSet rs = session.execute(statement("scan", table, fields).bind(startkey, recordcount));
      for (Row row : rs) {
        result.add(fields(row, null));
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("scan", e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      PreparedStatement stmt = statement("update", table, values.keySet());
      List<String> cols = new ArrayList<>(new TreeSet<>(values.keySet()));
      Object[] args = new Object[cols.size() + 1];
      for (int i = 0; i < cols.size(); i++) {
        args[i] = values.get(cols.get(i)).toString();
      }
      args[cols.size()] = key;
      session.execute(stmt.bind(args));
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("update", e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      PreparedStatement stmt = statement("insert", table, values.keySet());
      List<String> cols = new ArrayList<>(new TreeSet<>(values.keySet()));
      Object[] args = new Object[cols.size() + 1];
      args[0] = key;
      for (int i = 0; i < cols.size(); i++) {
        args[i + 1] = values.get(cols.get(i)).toString();
      }
      session.execute(stmt.bind(args));
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("insert", e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      session.execute(statement("delete", table, null).bind(key));
      return Status.OK;
    } catch (RuntimeException e) {
      return failed("delete", e);
    }
  }
}
