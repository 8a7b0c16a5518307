#!/usr/bin/env bash
# Fetch the Apache Kafka 4.x broker and CLI jars (and their runtime dependencies) from Maven Central
# into a cache directory and print that directory on stdout.
#
#   test/clients/kafka/fetch-kafka.sh        # prints e.g. /var/cache/kafka_pg/kafka-jars-4.4.0
#
# The version and the artifacts are those of pom.xml beside this script. A complete cache (marked by
# .complete holding the pom's checksum) is reused without touching the network, so reruns are
# offline-safe; if Maven cannot reach the registry it retries offline from ~/.m2.
# Settings: KAFKA_PG_CACHE (cache root; default /var/cache/kafka_pg if writable, else
# ~/.cache/kafka_pg), MAVEN_REPO_LOCAL (Maven's local repository, default ~/.m2/repository).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom=$here/pom.xml
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")

if [ -n "${KAFKA_PG_CACHE:-}" ]; then
	cache_root=$KAFKA_PG_CACHE
elif mkdir -p /var/cache/kafka_pg 2>/dev/null && [ -w /var/cache/kafka_pg ]; then
	cache_root=/var/cache/kafka_pg
else
	cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/kafka_pg
fi
dir=$cache_root/kafka-jars-$version
sum=$(sha256sum "$pom" | cut -d' ' -f1)

if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$sum" ]; then
	echo "$dir"
	exit 0
fi

command -v mvn >/dev/null || { echo "fetch-kafka.sh: mvn not found (apt-get install maven)" >&2; exit 1; }
mkdir -p "$cache_root"
# one fetch at a time; whoever waited finds the cache complete
exec 9>"$cache_root/.kafka-jars.lock"
flock 9
if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$sum" ]; then
	echo "$dir"
	exit 0
fi
tmp=$(mktemp -d "$cache_root/.kafka-jars-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mvn_args=(-B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/jars")
[ -n "${MAVEN_REPO_LOCAL:-}" ] && mvn_args+=(-Dmaven.repo.local="$MAVEN_REPO_LOCAL")
echo "fetch-kafka.sh: fetching Apache Kafka $version jars into $dir" >&2
if ! mvn "${mvn_args[@]}" >"$tmp/mvn.log" 2>&1; then
	echo "fetch-kafka.sh: online fetch failed, retrying offline" >&2
	if ! mvn -o "${mvn_args[@]}" >>"$tmp/mvn.log" 2>&1; then
		tail -30 "$tmp/mvn.log" >&2
		echo "fetch-kafka.sh: could not fetch the Kafka jars" >&2
		exit 1
	fi
fi
ls "$tmp/jars"/kafka_2.13-"$version".jar "$tmp/jars"/kafka-tools-"$version".jar >/dev/null
echo "$sum" >"$tmp/jars/.complete"
rm -rf "$dir"
mv "$tmp/jars" "$dir"
echo "$dir"
