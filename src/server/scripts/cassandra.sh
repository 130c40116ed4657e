# kvperf server script: Apache Cassandra 5.0 (jars from Maven Central) on 127.0.0.1..127.0.0.N; after common.sh.
# Data dir: node i lives in DIR/node<i> (conf/, data/, commitlog/, hints/, saved_caches/, system.log,
#   stdout.log, cassandra.pid); every node listens on KVPERF_PORT (CQL) at 127.0.0.<i> (loopback, no setup needed).
# Settings: KVPERF_CASSANDRA_STORAGE_PORT  inter-node port of every node (default 7000)
#           KVPERF_CASSANDRA_HEAP          JVM heap per node, -Xms = -Xmx (default 1G)
#           KVPERF_CASSANDRA_VERSION       org.apache.cassandra:cassandra-all version (default 5.0.9)
# Install: the jars in $KVPERF_CACHE/servers/cassandra-<version>/lib (Maven; Java 11 or 17 from apt if missing).
# A fresh node joins alone, after the previous one answers CQL (one retry if its join fails); nodes that
# already joined are restarted together (node 1, the seed, first). On a failed start, nodes already up
# are left running (call stop). Status exits 1 when some nodes are down.

VERSION=${KVPERF_CASSANDRA_VERSION:-5.0.9}
INST=$CACHE/servers/cassandra-$VERSION
SPORT=${KVPERF_CASSANDRA_STORAGE_PORT:-7000}
HEAP=${KVPERF_CASSANDRA_HEAP:-1G}
NODES=${KVPERF_NODES:-1}
case $NODES in [1-9]|[1-9][0-9]) ;; *) die "KVPERF_NODES must be 1..99" ;; esac

installed() { [ -f "$INST/.complete" ]; }

need_java() {
    command -v java >/dev/null 2>&1 || { mkdir -p "$CACHE/servers"; apt_install "$CACHE/servers/cassandra-apt.log" openjdk-17-jre-headless; }
    local v; v=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
    case $v in 11|17) ;; *) die "Cassandra $VERSION needs Java 11 or 17, found java.specification.version=$v" ;; esac
}

do_install() {
    if installed; then echo "$name: installed version=$VERSION lib=$INST/lib (cached)"; return 0; fi
    own_install_dir "$INST"
    own_cache_file "$CACHE/servers/.cassandra-$VERSION.lock"
    own_cache_file "$CACHE/servers/cassandra-$VERSION-install.log"
    mkdir -p "$CACHE/servers"
    command -v mvn >/dev/null 2>&1 || apt_install "$CACHE/servers/cassandra-apt.log" maven
    need_java
    exec 9>>"$CACHE/servers/.cassandra-$VERSION.lock"
    flock 9
    if installed; then echo "$name: installed version=$VERSION lib=$INST/lib (installed concurrently)"; exec 9>&-; return 0; fi
    own_install_dir "$INST"
    local t0 tmp log n
    t0=$(now)
    # made whole here, then renamed to $INST: nothing at $INST is ever removed
    tmp=$(new_install_dir "$INST")
    log=$CACHE/servers/cassandra-$VERSION-install.log
    cat > "$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.kvperf</groupId><artifactId>cassandra-runner</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId><version>$VERSION</version></dependency>
  </dependencies>
</project>
EOF
    if ! mvn -B -f "$tmp/pom.xml" dependency:copy-dependencies -DoutputDirectory="$tmp/lib" >"$log" 2>&1; then
        rm -rf "$tmp"; die "mvn could not fetch cassandra-all $VERSION, see $log"
    fi
    ls "$tmp/lib/cassandra-all-$VERSION.jar" "$tmp/lib"/jamm-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die "cassandra-all or jamm jar missing after mvn, see $log"; }
    rm -f "$tmp/pom.xml"; touch "$tmp/.complete"; chmod 755 "$tmp"
    place_install "$tmp" "$INST"
    exec 9>&-   # release the lock (a server started by this shell must not inherit it)
    n=$(ls "$INST/lib" | wc -l)
    echo "$name: installed version=$VERSION lib=$INST/lib jars=$n size=$(du -sh "$INST/lib" | cut -f1) elapsed=$(since "$t0")s"
}

addr() { echo "127.0.0.$1"; }

node_pid() { # pid of node $1 if its JVM is alive
    local f=$DIR/node$1/cassandra.pid p
    [ -f "$f" ] || return 1
    p=$(cat "$f" 2>/dev/null) || return 1
    [ -n "$p" ] && alive "$p" && verified "$p" || return 1
    is_program "$p" org.apache.cassandra.service.CassandraDaemon || return 1
    echo "$p"
}
# CQL v4 OPTIONS frame; a live native transport answers with a SUPPORTED frame (version 0x84, opcode 0x06)
cql_answers() {
    local r
    r=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 1
        printf "\x04\x00\x00\x00\x05\x00\x00\x00\x00" >&3; head -c 5 <&3 | od -An -tx1' "$1" "$PORT" 2>/dev/null) || return 1
    # shellcheck disable=SC2116,SC2086 # squeeze whitespace
    r=$(echo $r)
    [ "$r" = "84 00 00 00 06" ]
}
node_ready() { grep -q "Starting listening for CQL clients" "$DIR/node$1/system.log" 2>/dev/null && cql_answers "$(addr "$1")"; }

write_conf() { # write_conf NODE
    local i=$1 nd=$DIR/node$1 a; a=$(addr "$1")
    local rf=$NODES f; [ "$rf" -le 3 ] || rf=3
    own_dirs "$nd" "$nd/conf" "$nd/data" "$nd/commitlog" "$nd/saved_caches" "$nd/hints" "$nd/cdc_raw"
    for f in conf/cassandra.yaml conf/logback.xml system.log stdout.log cassandra.pid .joined; do own_cache_file "$nd/$f"; done
    mkdir -p "$nd/conf" "$nd/data" "$nd/commitlog" "$nd/saved_caches" "$nd/hints" "$nd/cdc_raw"
    cat > "$nd/conf/cassandra.yaml" <<EOF
# written by kvperf at each start
cluster_name: 'kvperf'
num_tokens: 16
allocate_tokens_for_local_replication_factor: $rf
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories:
  - $nd/data
commitlog_directory: $nd/commitlog
saved_caches_directory: $nd/saved_caches
hints_directory: $nd/hints
cdc_raw_directory: $nd/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$(addr 1):$SPORT"
listen_address: $a
rpc_address: $a
storage_port: $SPORT
native_transport_port: $PORT
start_native_transport: true
endpoint_snitch: SimpleSnitch
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
concurrent_compactors: 1
EOF
    cat > "$nd/conf/logback.xml" <<EOF
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$nd/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF
}

start_node() { # start_node NODE: launch the JVM in the background, pid in node<i>/cassandra.pid
    local i=$1 nd=$DIR/node$1 jamm f
    LAUNCHED=1
    jamm=$(ls "$INST"/lib/jamm-*.jar | head -n 1)
    # keep the previous run's logs for diagnosis; readiness checks read only the fresh ones
    for f in system.log stdout.log; do [ ! -f "$nd/$f" ] || mv -f "$nd/$f" "$nd/$f.prev"; done
    # setsid: detach from the caller's session; the inner bash writes its pid, then execs java (same pid).
    setsid bash -c 'echo $$ > "$0"; exec "$@"' "$nd/cassandra.pid" \
      java -Xms"$HEAP" -Xmx"$HEAP" -Xss512k \
      -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1 -XX:G1HeapRegionSize=16m \
      -XX:+ExitOnOutOfMemoryError -XX:-OmitStackTraceInFastThrow \
      -Djdk.attach.allowAttachSelf=true \
      --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
      --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED \
      --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED \
      --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED \
      --add-exports java.sql/java.sql=ALL-UNNAMED \
      --add-exports java.base/java.lang.ref=ALL-UNNAMED \
      --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED \
      --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED \
      --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED \
      --add-opens java.base/java.lang.module=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.loader=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.math=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.module=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED \
      --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
      --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
      --add-opens java.base/java.io=ALL-UNNAMED \
      --add-opens java.base/java.nio=ALL-UNNAMED \
      --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
      --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED \
      --add-opens java.base/java.lang=ALL-UNNAMED \
      --add-opens java.base/java.util=ALL-UNNAMED \
      --add-opens java.base/java.util.concurrent=ALL-UNNAMED \
      --add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED \
      --add-opens java.base/java.math=ALL-UNNAMED \
      --add-opens java.base/java.net=ALL-UNNAMED \
      -Dio.netty.tryReflectionSetAccessible=true \
      -Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11 \
      -javaagent:"$jamm" \
      -Dcassandra.config="file://$nd/conf/cassandra.yaml" \
      -Dcassandra.storagedir="$nd" -Dcassandra.logdir="$nd" \
      -Dlogback.configurationFile="$nd/conf/logback.xml" \
      -Dcassandra-foreground=yes -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000 \
      -cp "$nd/conf:$INST/lib/*" \
      org.apache.cassandra.service.CassandraDaemon \
      >"$nd/stdout.log" 2>&1 </dev/null &
}

wait_node() { # wait_node NODE T0 [soft]: until CQL answers; soft: return 2 (message in EXITED) if the JVM exits
    local i=$1 nd=$DIR/node$1 msg
    while ! node_ready "$i"; do
        sleep 0.5
        if ! node_pid "$i" >/dev/null; then
            [ -s "$nd/cassandra.pid" ] || continue
            sleep 1
            if ! node_pid "$i" >/dev/null; then
                msg=$( { grep -h -A1 -E '^(ERROR|Exception)' "$nd/system.log" "$nd/stdout.log"; head -n 1 "$nd/stdout.log"; } 2>/dev/null | grep -v -E '^(--|\s*at )' | head -n 2 | tr '\n' ' ')
                EXITED="node $i exited during start, see $nd/system.log: $msg"
                [ "${3:-}" != soft ] || return 2
                die "$EXITED"
            fi
        fi
        [ "$(since "$2" | cut -d. -f1)" -lt "$TIMEOUT" ] || die "node $i not answering CQL on $(addr "$i"):$PORT after ${TIMEOUT}s, see $nd/system.log"
    done
}

wait_gossip() { # wait_gossip NODE T0: until the node has joined gossip (log: "state jump to NORMAL")
    local nd=$DIR/node$1
    while ! grep -q "Node /$(addr "$1"):$SPORT state jump to NORMAL" "$nd/system.log" 2>/dev/null; do
        sleep 0.5
        node_pid "$1" >/dev/null || wait_node "$1" "$2"   # reports the exit
        [ "$(since "$2" | cut -d. -f1)" -lt "$TIMEOUT" ] || die "node $1 not gossiping after ${TIMEOUT}s, see $nd/system.log"
    done
}

do_start() {
    need_dir
    local i p t0 tn pids='' started=0 prev launched=''
    mkdir -p "$DIR"
    DIR=$(cd -P "$DIR" && pwd -P)
    if [ -f "$DIR/cluster.nodes" ]; then
        prev=$(cat "$DIR/cluster.nodes")
        [ "$prev" = "$NODES" ] || die "$DIR holds a $prev-node cluster; use --nodes $prev or a fresh dir"
    fi
    installed || do_install >/dev/null
    need_java
    t0=$(now)
    for i in $(seq 1 "$NODES"); do
        node_pid "$i" >/dev/null && continue
        port_open "$(addr "$i")" "$PORT" && die "port $(addr "$i"):$PORT is already in use by another process"
        port_open "$(addr "$i")" "$SPORT" && die "port $(addr "$i"):$SPORT is already in use by another process"
    done
    # Nodes that joined the ring before restart together (each one waits up to 10 s for its peers
    # otherwise); a fresh node must join alone, after the previous one is up.
    for i in $(seq 1 "$NODES"); do
        if ! node_pid "$i" >/dev/null && [ -f "$DIR/node$i/.joined" ]; then
            write_conf "$i"; start_node "$i"; launched="$launched $i"; started=$((started + 1))
            # the others' first gossip round fails if the seed (node 1) is not gossiping yet
            [ "$i" != 1 ] || [ "$NODES" = 1 ] || wait_gossip 1 "$t0"
        fi
    done
    for i in $launched; do wait_node "$i" "$t0"; done
    [ -z "$launched" ] || echo "$NODES" > "$DIR/cluster.nodes"
    for i in $(seq 1 "$NODES"); do
        if ! node_pid "$i" >/dev/null; then
            write_conf "$i"
            tn=$(now)
            start_node "$i"
            # a joining node can fail on a busy machine (gossip/ring not settled yet): retry it once
            if ! wait_node "$i" "$tn" soft; then
                echo "kvperf-server $name: $EXITED -- retrying once" >&2
                sleep 5; start_node "$i"; wait_node "$i" "$tn"
            fi
            echo "$NODES" > "$DIR/cluster.nodes"
            started=$((started + 1))
            echo "kvperf-server $name: node $i joined addr=$(addr "$i"):$PORT elapsed=$(since "$tn")s" >&2
            [ "$i" = "$NODES" ] || sleep 3   # let gossip spread the new node's NORMAL state first
        else
            node_ready "$i" || wait_node "$i" "$t0"
        fi
        touch "$DIR/node$i/.joined"
        pids=${pids:+$pids,}$(node_pid "$i")
    done
    if [ "$started" = 0 ]; then echo "$name: already running nodes=$NODES pids=$pids addr=$(addr 1):$PORT"; return 0; fi
    echo "$name: started nodes=$NODES pids=$pids addr=$(addr 1):$PORT heap=$HEAP version=$VERSION elapsed=$(since "$t0")s"
}

# A cluster of nodes, each with its pid file: these replace the shared do_stop and do_status.
do_stop() {
    need_dir
    local f i p t0 pids='' n=0
    t0=$(now)
    for f in "$DIR"/node*/cassandra.pid; do
        [ -f "$f" ] || continue
        i=${f%/cassandra.pid}; i=${i##*/node}
        if p=$(node_pid "$i"); then kill -TERM "$p" 2>/dev/null || true; pids=${pids:+$pids,}$p; else rm -f "$f"; fi
    done
    [ -n "$pids" ] || { echo "$name: not running"; return 0; }
    for i in $(seq 1 600); do
        n=0; for p in ${pids//,/ }; do alive "$p" && n=$((n + 1)); done
        [ "$n" = 0 ] && break
        sleep 0.1
    done
    for p in ${pids//,/ }; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
    sleep 0.2
    for p in ${pids//,/ }; do alive "$p" && die "pid $p did not exit"; done
    rm -f "$DIR"/node*/cassandra.pid
    echo "$name: stopped pids=$pids elapsed=$(since "$t0")s"
}

do_status() {
    need_dir
    local i up=0 ans=0 pids='' p
    for i in $(seq 1 "$NODES"); do
        if p=$(node_pid "$i"); then up=$((up + 1)); pids=${pids:+$pids,}$p; node_ready "$i" && ans=$((ans + 1)); fi
    done
    if [ "$ans" = "$NODES" ]; then echo "$name: running nodes=$NODES pids=$pids addr=$(addr 1):$PORT"; return 0; fi
    trap - ERR
    if [ "$up" = 0 ]; then echo "$name: not running"; exit 3; fi
    echo "$name: degraded running=$up answering=$ans of nodes=$NODES pids=$pids"; exit 1
}

