# test/lib/tap.sh: the TAP lines and the count of a shell test (sourced after cd to the top).
#   check NAME OK [DETAIL]  prints "ok - NAME" when OK is 1, else "not ok - NAME DETAIL"; counts it
#   tap_finish              prints the last line, "N passed, M failed"; false if any failed
passed=0
failed=0
check() {
	if [ "$2" = 1 ]; then passed=$((passed + 1)); echo "ok - $1"
	else failed=$((failed + 1)); echo "not ok - $1 ${3:-}"; fi
}
tap_finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
}
