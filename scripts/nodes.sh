# Sourced by scripts/cluster.sh and scripts/ha.sh: starts the simulator and
# three crewcast nodes on one PostgreSQL (db_url), the simulator posting
# every webhook to the first node; the others' groups are reached through
# the shared inbox (LISTEN/NOTIFY). Reads port, sim_port, db_url,
# admin_key, secret, ttl and run; appends to pids; sets sim_token and
# urls. Exits when a process does not come up.
start_sim_and_nodes() {
	sim_token=$(rand) # the simulator's /sim/* routes need it
	CREWCAST_SIM_TOKEN="$sim_token" bin/crewcast sim --addr "127.0.0.1:${sim_port}" --telnyx-webhook-url "http://127.0.0.1:${port}/webhooks/telnyx" \
		>"$run/sim.log" 2>&1 &
	pids+=($!)
	local keys="" url p i
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
			for _ in $(seq 200); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
		fi
	done
	for url in "${urls[@]}"; do
		for _ in $(seq 200); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
		curl -fsS "$url/readyz" >/dev/null || { echo "$url did not start; logs in $run" >&2; exit 1; }
	done
}
