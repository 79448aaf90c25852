#!/usr/bin/env bash
# make cluster: three crewcast nodes on loopback against one PostgreSQL, plus
# the provider simulator (docs/deploy.md). Ctrl-C stops everything.
#
#   CREWCAST_CLUSTER_DB   PostgreSQL URL (default: the local test server);
#                         the script uses a database "crewcast_cluster" on it,
#                         created if missing (needs psql).
#   CREWCAST_CLUSTER_PORT first node's port (default 8181; then +1, +2; the
#                         simulator listens on +10).
#   CREWCAST_LEASE_TTL    lease TTL of every node (default 10s).
set -euo pipefail
cd "$(dirname "$0")/.."

base_url=${CREWCAST_CLUSTER_DB:-postgres://root@127.0.0.1:5432/test?sslmode=disable}
port=${CREWCAST_CLUSTER_PORT:-8181}
sim_port=$((port + 10))
ttl=${CREWCAST_LEASE_TTL:-10s}
db_name=crewcast_cluster
# The same server and options, database crewcast_cluster.
db_url=$(printf '%s' "$base_url" | sed -E "s#^(postgres(ql)?://[^/]+)/[^?]*#\1/${db_name}#")
if command -v psql >/dev/null; then
	if ! psql "$base_url" -tAc "SELECT 1 FROM pg_database WHERE datname = '${db_name}'" | grep -q 1; then
		psql "$base_url" -qc "CREATE DATABASE ${db_name}"
	fi
else
	echo "psql not found: make sure the database ${db_name} exists ($db_url)" >&2
fi

go build -o bin/crewcast ./cmd/crewcast
run=$(mktemp -d "${TMPDIR:-/tmp}/crewcast-cluster.XXXXXX")
pids=()
cleanup() {
	trap - INT TERM EXIT
	echo
	echo "stopping (each node hands its shards off before it exits)…"
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	echo "logs kept in $run"
}
trap cleanup INT TERM EXIT

rand() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
admin_key="cluster-admin-$(rand)"
secret=$(rand)

. "$(dirname "$0")/nodes.sh"
start_sim_and_nodes

cat <<EOT
crewcast cluster: 3 nodes on ${db_url%%\?*} (lease TTL ${ttl}), simulator on http://127.0.0.1:${sim_port} (control token ${sim_token})
  node-1  ${urls[0]}   (the simulator posts webhooks here)
  node-2  ${urls[1]}
  node-3  ${urls[2]}

  export CREWCAST_URL=${urls[1]}
  export CREWCAST_KEY=${admin_key}
  curl -s -H "Authorization: Bearer \$CREWCAST_KEY" \$CREWCAST_URL/debug/cluster

logs: $run — Ctrl-C stops the cluster.
EOT
wait
