#!/bin/sh
# deploy/images/zookeeper/entrypoint.sh: writes zoo.cfg from the official
# image's ZOO_* variables, then runs ZooKeeper in the foreground.
set -eu
cfg=/conf/zoo.cfg
{
  echo "dataDir=/data"
  echo "dataLogDir=/datalog"
  echo "clientPort=${ZOO_PORT:-2181}"
  echo "tickTime=${ZOO_TICK_TIME:-2000}"
  echo "initLimit=${ZOO_INIT_LIMIT:-5}"
  echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
  echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
  echo "admin.enableServer=false"
  echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr,ruok,mntr}"
  echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
  for server in ${ZOO_SERVERS:-}; do echo "$server"; done
} >"$cfg"
echo "${ZOO_MY_ID:-1}" >/data/myid
# slf4j-simple: ZooKeeper logs to stderr (the container log) at INFO.
exec java -Xmx${ZOO_HEAP_MB:-256}m -Dorg.slf4j.simpleLogger.showDateTime=true \
  -cp "/conf:/usr/share/java/slf4j-simple.jar:/usr/share/java/zookeeper.jar" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg"
