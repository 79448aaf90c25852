#!/usr/bin/env bash
# make ha: crewcast on a highly available PostgreSQL, all on loopback
# (docs/deploy.md, "High availability PostgreSQL"): one etcd, two PostgreSQL
# instances under Patroni (a primary and a standby, run as the postgres
# user with their data under a temporary directory), three crewcast nodes
# whose CREWCAST_DB names both hosts with target_session_attrs=read-write,
# and the provider simulator. Ctrl-C stops everything.
#
#   CREWCAST_HA_PORT   first crewcast node's port (default 8281; nodes +0..+2,
#                      simulator +10, etcd +11/+12, PostgreSQL +13/+14,
#                      Patroni's REST API +15/+16)
#   CREWCAST_HA_SYNC   on (default): Patroni's synchronous_mode, no
#                      acknowledged webhook lost when the primary dies;
#                      off: asynchronous replication
#   CREWCAST_LEASE_TTL lease TTL of every crewcast node (default 10s)
#   PG_BIN             PostgreSQL binaries (default /usr/lib/postgresql/15/bin)
#
# Needs the Debian packages patroni and etcd-server, PostgreSQL's server
# binaries, curl and psql.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${CREWCAST_HA_PORT:-8281}
sync=${CREWCAST_HA_SYNC:-on}
ttl=${CREWCAST_LEASE_TTL:-10s}
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
sim_port=$((port + 10))
etcd_port=$((port + 11)) etcd_peer=$((port + 12))
pg_ports=($((port + 13)) $((port + 14)))
rest_ports=($((port + 15)) $((port + 16)))

for tool in patroni etcd curl psql "$pg_bin/postgres"; do
	command -v "$tool" >/dev/null || { echo "make ha needs $tool (apt-get install patroni etcd-server postgresql-15)" >&2; exit 1; }
done
case "$sync" in on) sync_mode=true ;; off) sync_mode=false ;; *) echo "CREWCAST_HA_SYNC: on or off" >&2; exit 2 ;; esac

# PostgreSQL refuses to run as root: Patroni and its instances run as
# postgres when we are root (setpriv execs, so $! is Patroni itself and a
# SIGTERM reaches it), else as ourselves.
as_pg() { if [ "$(id -u)" = 0 ]; then exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"; else exec "$@"; fi; }

go build -o bin/crewcast ./cmd/crewcast
run=$(mktemp -d "${TMPDIR:-/tmp}/crewcast-ha.XXXXXX")
chmod 755 "$run"
pids=() patronis=() etcd_pid=""
cleanup() {
	trap - INT TERM EXIT
	echo
	echo "stopping crewcast (each node hands its shards off), then Patroni with PostgreSQL, then etcd…"
	# crewcast and the simulator first, while the database answers; then
	# both Patronis (each stops its PostgreSQL); etcd last, or a Patroni
	# that loses it first demotes its primary.
	for group in pids patronis; do
		eval "list=(\"\${${group}[@]}\")"
		for pid in "${list[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
		for pid in "${list[@]}"; do wait "$pid" 2>/dev/null || true; done
	done
	if [ -n "$etcd_pid" ]; then kill -TERM "$etcd_pid" 2>/dev/null || true; wait "$etcd_pid" 2>/dev/null || true; fi
	echo "logs and data kept in $run"
}
trap cleanup INT TERM EXIT

# ---- etcd ----
etcd --name ha --data-dir "$run/etcd" \
	--listen-client-urls "http://127.0.0.1:${etcd_port}" --advertise-client-urls "http://127.0.0.1:${etcd_port}" \
	--listen-peer-urls "http://127.0.0.1:${etcd_peer}" --initial-advertise-peer-urls "http://127.0.0.1:${etcd_peer}" \
	--initial-cluster "ha=http://127.0.0.1:${etcd_peer}" >"$run/etcd.log" 2>&1 &
etcd_pid=$!
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:${etcd_port}/health" >/dev/null 2>&1 && break; sleep 0.1; done

# ---- Patroni: two PostgreSQL instances ----
for i in 0 1; do
	name="pg$((i + 1))"
	mkdir -p "$run/$name"
	cat >"$run/$name.yml" <<EOF
scope: crewcast-ha
name: $name
restapi:
  listen: 127.0.0.1:${rest_ports[i]}
  connect_address: 127.0.0.1:${rest_ports[i]}
etcd3:
  hosts: 127.0.0.1:${etcd_port}
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 2
    retry_timeout: 5
    maximum_lag_on_failover: 1073741824
    synchronous_mode: ${sync_mode}
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 200
  initdb:
  - encoding: UTF8
  - data-checksums
  pg_hba:
  - host replication replicator 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 trust
  - local all all trust
postgresql:
  listen: 127.0.0.1:${pg_ports[i]}
  connect_address: 127.0.0.1:${pg_ports[i]}
  data_dir: $run/$name/data
  bin_dir: $pg_bin
  pgpass: $run/$name/pgpass
  authentication:
    superuser: {username: postgres, password: postgres}
    replication: {username: replicator, password: replicator}
  parameters:
    unix_socket_directories: $run/$name
EOF
	chown -R postgres "$run/$name" "$run/$name.yml" 2>/dev/null || true
	(as_pg patroni "$run/$name.yml") >"$run/$name.log" 2>&1 &
	patronis+=($!)
	if [ "$i" = 0 ]; then # the first bootstraps the cluster; the second clones it
		for _ in $(seq 300); do curl -fsS "http://127.0.0.1:${rest_ports[0]}/primary" >/dev/null 2>&1 && break; sleep 0.2; done
	fi
done
primary=""
for _ in $(seq 300); do
	for i in 0 1; do
		curl -fsS "http://127.0.0.1:${rest_ports[i]}/primary" >/dev/null 2>&1 && primary=${pg_ports[i]}
	done
	[ -n "$primary" ] && break
	sleep 0.2
done
[ -n "$primary" ] || { echo "no PostgreSQL primary under Patroni; see $run/pg1.log" >&2; exit 1; }
for _ in $(seq 300); do curl -fsS "http://127.0.0.1:${rest_ports[1]}/replica" >/dev/null 2>&1 && break; sleep 0.2; done
if ! psql -h 127.0.0.1 -p "$primary" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'crewcast'" | grep -q 1; then
	psql -h 127.0.0.1 -p "$primary" -U postgres -qc "CREATE DATABASE crewcast"
fi
db_url="postgres://postgres@127.0.0.1:${pg_ports[0]},127.0.0.1:${pg_ports[1]}/crewcast?target_session_attrs=read-write&sslmode=disable&connect_timeout=2"

# ---- the simulator and three crewcast nodes ----
rand() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
admin_key="ha-admin-$(rand)"
secret=$(rand)
. "$(dirname "$0")/nodes.sh"
start_sim_and_nodes

cat <<EOT
crewcast on HA PostgreSQL: Patroni (scope crewcast-ha, synchronous mode ${sync}) with etcd on 127.0.0.1:${etcd_port}
  PostgreSQL pg1  127.0.0.1:${pg_ports[0]}   Patroni API http://127.0.0.1:${rest_ports[0]}/patroni
  PostgreSQL pg2  127.0.0.1:${pg_ports[1]}   Patroni API http://127.0.0.1:${rest_ports[1]}/patroni
  primary now: 127.0.0.1:${primary}
  CREWCAST_DB=${db_url}
  node-1  ${urls[0]}   (the simulator posts webhooks here)
  node-2  ${urls[1]}
  node-3  ${urls[2]}
  simulator http://127.0.0.1:${sim_port} (control token ${sim_token})

  export CREWCAST_URL=${urls[1]}
  export CREWCAST_KEY=${admin_key}
  patronictl -c $run/pg1.yml list          # who is primary
  kill -9 \$(head -1 $run/<primary>/data/postmaster.pid) \$(pgrep -f "patroni $run/<primary>.yml")   # lose the primary

logs and data: $run — Ctrl-C stops everything.
EOT
wait
