#!/usr/bin/env bash
set -euo pipefail
# What the test suite drives besides Python, installed from Debian where missing (make test
# runs this first; it does nothing when all is there):
# - PostgreSQL's binaries: the PostgreSQL store's tests start a real server (tests/store_pg);
# - Chromium: the web console's tests and stompjs over WebSocket run in it headless;
# - npm: make test installs @stomp/stompjs into tests/js with npm ci;
# - ActiveMQ's client jars: the OpenWire codec tests compile a Java program against them;
#   the Java client tests (tests/openwire/test_java_clients.py) also Spring's JmsTemplate.
missing=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
    && ! [ -x "$(pg_config --bindir 2>/dev/null)/initdb" ]; then
    missing+=(postgresql)
fi
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v npm >/dev/null || missing+=(npm)
[ -f /usr/share/java/activemq-client.jar ] || missing+=(libactivemq-java)
[ -f /usr/share/java/spring3-jms.jar ] || missing+=(libspring-jms-java)
if [ ${#missing[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null; then
        sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
        echo "installing with apt: ${missing[*]}" >&2
        $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "missing ${missing[*]} and there is no apt-get: the tests that need them are" \
            "skipped (or, for npm, make test fails)" >&2
    fi
fi
