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

# The simulator posts every webhook to the first node; the others' groups
# are reached through the shared inbox (LISTEN/NOTIFY).
sim_token=$(rand) # the simulator's /sim/* routes need it
CREWCAST_SIM_TOKEN="$sim_token" bin/crewcast sim --addr "127.0.0.1:${sim_port}" --telnyx-webhook-url "http://127.0.0.1:${port}/webhooks/telnyx" \
	>"$run/sim.log" 2>&1 &
pids+=($!)
keys=""
for _ in $(seq 50); do
	keys=$(curl -fsS -H "Authorization: Bearer $sim_token" "http://127.0.0.1:${sim_port}/sim/keys" 2>/dev/null) && break
	sleep 0.1
done
[ -n "$keys" ] || { echo "the simulator did not start; see $run/sim.log" >&2; exit 1; }
field() { printf '%s' "$keys" | sed -E "s/.*\"$1\":\"([^\"]*)\".*/\1/"; }

urls=()
for i in 0 1 2; do
	p=$((port + i))
	url="http://127.0.0.1:${p}"
	CREWCAST_DB="$db_url" CREWCAST_ADMIN_KEY="$admin_key" CREWCAST_CLUSTER_SECRET="$secret" \
	CREWCAST_PROVIDER=telnyx CREWCAST_TELNYX_API_BASE="http://127.0.0.1:${sim_port}" \
	CREWCAST_TELNYX_API_KEY="$(field telnyx_api_key)" CREWCAST_TELNYX_PUBLIC_KEY="$(field telnyx_public_key)" \
	CREWCAST_PUBLIC_URL="http://127.0.0.1:${port}" \
		bin/crewcast serve --addr "127.0.0.1:${p}" --node-id "node-$((i + 1))" --advertise-url "$url" --lease-ttl "$ttl" \
		>"$run/node-$((i + 1)).log" 2>&1 &
	pids+=($!)
	urls+=("$url")
	# Migrations run once, on the first node, before the others start.
	if [ "$i" = 0 ]; then
		for _ in $(seq 100); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
	fi
done
for url in "${urls[@]}"; do
	for _ in $(seq 100); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
	curl -fsS "$url/readyz" >/dev/null || { echo "$url did not start; logs in $run" >&2; exit 1; }
done

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
