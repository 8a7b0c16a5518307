#!/usr/bin/python3
"""Mutual TLS (ssl.client.auth), the same checks on Apache Kafka and kafka_pg.

    test_mtls.py HOST:PORT CERTDIR (required|requested) [--kafka_pg]

The listener is SSL with client certificates checked against CERTDIR/ca.crt; its own certificate
is CERTDIR/server.crt.  CERTDIR holds client certificates signed by that CA: alice.crt/.key
(CN=alice, a LOGIN role on kafka_pg) and nobody.crt/.key (CN=nobody, no such role), and
rogue.crt/.key (CN=alice, signed by another CA).

required: librdkafka with alice's certificate produces and consumes; without a certificate, or
with one from another CA, it cannot connect; on kafka_pg, CN=nobody is refused too (the CN must
be a LOGIN role).  requested: a client without a certificate is served (anonymous), and alice's
still works.  Prints "ok"/"not ok" lines and "N passed, M failed".
"""
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

bootstrap, certdir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
is_pg = "--kafka_pg" in sys.argv
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + name, flush=True)
    else:
        failed += 1
        print("not ok - %s %s" % (name, detail), flush=True)


def conf(cert=None, **extra):
    d = {"bootstrap.servers": bootstrap, "security.protocol": "SSL",
         "ssl.ca.location": certdir + "/server.crt", "ssl.endpoint.identification.algorithm": "none"}
    if cert:
        d["ssl.certificate.location"] = "%s/%s.crt" % (certdir, cert)
        d["ssl.key.location"] = "%s/%s.key" % (certdir, cert)
    d.update(extra)
    return d


def connects(cert):
    a = AdminClient(conf(cert, error_cb=lambda e: None))
    try:
        a.list_topics(timeout=8)
        return True
    except KafkaException:
        return False


def produce_consume(cert):
    topic = "mtls-" + uuid.uuid4().hex[:8]
    errors = []
    p = Producer(conf(cert, error_cb=lambda e: errors.append(e)))
    p.produce(topic, b"a")
    p.produce(topic, b"b")
    left = p.flush(20)
    c = Consumer(conf(cert, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = []
    deadline = time.time() + 30
    while len(got) < 2 and time.time() < deadline:
        m = c.poll(1)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return left == 0 and got == [b"a", b"b"], (left, errors[:2], got)


ok, detail = produce_consume("alice")
check("%s: librdkafka with a client certificate (CN=alice) produces and consumes" % mode, ok, detail)
if mode == "required":
    check("required: a client without a certificate cannot connect", not connects(None))
    check("required: a certificate from another CA is refused", not connects("rogue"))
    if is_pg:
        check("kafka_pg: a certificate whose CN is not a role (CN=nobody) is refused", not connects("nobody"))
else:
    check("requested: a client without a certificate is served", connects(None))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
