#!/usr/bin/env bash
# test/clients/python/venv.sh NAME: print the python of a virtualenv with exactly the packages of
# requirements-NAME.txt beside this script (current: the releases the client tests pin;
# kafka-python-2: the last kafka-python 2.x), made under $KAFKA_CLIENTS_CACHE (default
# /var/tmp/kafka_pg-clients) on first use and made again when the requirements change. Exit status
# non-zero (and pip's output on stderr) if it cannot be made. Every client part that needs one asks
# here, so none depends on another part having run first (on a fresh machine the admin part, run
# before the Python one, found no virtualenv and skipped its kafka-python checks until 2026-12-07).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KAFKA_CLIENTS_CACHE:-/var/tmp/kafka_pg-clients}
req=$here/requirements-$1.txt dir=$cache/venv-$1
[ -f "$req" ] || { echo "venv.sh: no $req" >&2; exit 2; }
if [ -x "$dir/bin/python" ] && cmp -s "$req" "$dir/requirements.txt"; then
	echo "$dir/bin/python"
	exit 0
fi
# one maker at a time (client parts may run side by side)
mkdir -p "$cache"
exec 9>"$cache/venv-$1.lock"
flock 9
if ! { [ -x "$dir/bin/python" ] && cmp -s "$req" "$dir/requirements.txt"; }; then
	rm -rf "$dir"
	/usr/bin/python3 -m venv "$dir" >&2 &&
		"$dir/bin/pip" install -q --disable-pip-version-check -r "$req" >&2 &&
		cp "$req" "$dir/requirements.txt" || exit 1
fi
echo "$dir/bin/python"
