#!/usr/bin/python3
"""SASL authentication on a SASL_PLAINTEXT listener, the same checks on Apache Kafka and kafka_pg.

    test_sasl.py HOST:PORT [--kafka_pg] [--ssl CAFILE]

--ssl: the listener is SASL_SSL, its certificate signed by CAFILE (PLAIN needs nothing more).

The broker has a user alice (password alice-secret) for SCRAM-SHA-256 and PLAIN, and
connections.max.reauth.ms = 3000.  With --kafka_pg also: bob (NOLOGIN, password bob-secret) and
carol (password carol-secret, VALID UNTIL in the past) are refused like a wrong password.

Real clients: confluent-kafka (librdkafka) produces and consumes as alice with each mechanism,
re-authenticates across the session lifetime, and is refused with a wrong password.  Raw
requests (kraw.py): the handshake state machine, wrong and malformed SCRAM messages (none may
take a worker down: a good login still works after them), session expiry.
Prints TAP-ish "ok"/"not ok" lines and "N passed, M failed".
"""
import sys
import time
import uuid

import kraw

bootstrap = sys.argv[1]
host, port = bootstrap.rsplit(":", 1)
port = int(port)
is_pg = "--kafka_pg" in sys.argv
cafile = sys.argv[sys.argv.index("--ssl") + 1] if "--ssl" in sys.argv else None

passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + name)
    else:
        failed += 1
        print("not ok - %s %s" % (name, detail))


def conn():
    return kraw.Conn(port, host, cafile=cafile)


ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED = 34, 33, 58

# ---- raw: the handshake state machine ----
c = conn()
check("ApiVersions before SaslHandshake is answered", c.api_versions() == 0)
err, mechs = c.handshake("SCRAM-SHA-256")
check("SaslHandshake SCRAM-SHA-256 accepted", err == 0 and "SCRAM-SHA-256" in mechs, (err, mechs))
err, msg, life = kraw.scram_login(c, "alice", "alice-secret")
check("SCRAM-SHA-256 login as alice", err == 0, (err, msg))
check("session lifetime is connections.max.reauth.ms", life == 3000, life)
check("Metadata after login is answered", len(c.metadata()) > 0)
time.sleep(3.5)
try:
    c.metadata()
    closed = c.is_closed(3)
except (kraw.Closed, ConnectionResetError):
    closed = True
check("a request after the session lifetime closes the connection", closed)
c.close()

c = conn()
err, mechs = c.handshake("SCRAM-SHA-512")
check("SCRAM-SHA-512 is UNSUPPORTED_SASL_MECHANISM" + ("" if is_pg else " (if not enabled)"),
      err == UNSUPPORTED_SASL_MECHANISM or not is_pg, (err, mechs))
if err == UNSUPPORTED_SASL_MECHANISM:
    check("... the enabled mechanisms are listed", "SCRAM-SHA-256" in mechs and "PLAIN" in mechs, mechs)
    check("... and the connection is closed", c.is_closed())
c.close()

c = conn()
err, mechs = c.handshake("GSSAPI")
check("an unknown mechanism is UNSUPPORTED_SASL_MECHANISM", err == UNSUPPORTED_SASL_MECHANISM, err)
check("... and the connection is closed", c.is_closed())
c.close()

c = conn()
c.send(3, 1, b"\xff\xff\xff\xff")
check("Metadata before SaslHandshake closes the connection unanswered", c.is_closed())
c.close()

c = conn()
c.handshake("SCRAM-SHA-256")
c.send(3, 1, b"\xff\xff\xff\xff")
try:
    _, body = c.recv()
    answered = True
except kraw.Closed:
    answered = False
check("Metadata between SaslHandshake and SaslAuthenticate: connection closed", c.is_closed(),
      "answered=%s" % answered)
print("#   (answered before closing: %s)" % answered)
c.close()

# ---- raw: wrong and malformed credentials ----
def login_fails(name, user, password, mech="SCRAM-SHA-256", tamper=None, token=None):
    c = conn()
    c.handshake(mech)
    if token is not None:
        err, msg, _, _ = c.authenticate(token)
    elif mech == "PLAIN":
        err, msg, _, _ = c.authenticate(b"\0" + user.encode() + b"\0" + password.encode())
    else:
        err, msg, _ = kraw.scram_login(c, user, password, tamper=tamper)
    check(name + " is refused", err in (SASL_AUTHENTICATION_FAILED, ILLEGAL_SASL_STATE), (err, msg))
    check("... and the connection is closed", c.is_closed())
    c.close()
    return err, msg


err, msg = login_fails("SCRAM-SHA-256 with a wrong password", "alice", "wrong")
check("... with SASL_AUTHENTICATION_FAILED", err == SASL_AUTHENTICATION_FAILED, err)
print("#   message: %s" % msg)
err, _ = login_fails("SCRAM-SHA-256 as an unknown user", "nobody-" + uuid.uuid4().hex[:6], "x")
check("... with SASL_AUTHENTICATION_FAILED", err == SASL_AUTHENTICATION_FAILED, err)
err, msg = login_fails("PLAIN with a wrong password", "alice", "wrong", mech="PLAIN")
check("... with SASL_AUTHENTICATION_FAILED", err == SASL_AUTHENTICATION_FAILED, err)
print("#   message: %s" % msg)
if is_pg:
    login_fails("SCRAM-SHA-256 as a NOLOGIN role", "bob", "bob-secret")
    login_fails("PLAIN as a NOLOGIN role", "bob", "bob-secret", mech="PLAIN")
    login_fails("SCRAM-SHA-256 as a role past VALID UNTIL", "carol", "carol-secret")
    login_fails("PLAIN as a role past VALID UNTIL", "carol", "carol-secret", mech="PLAIN")

login_fails("a client-final-message with a changed nonce", "alice", "alice-secret",
            tamper=lambda m: m.replace("r=", "r=x", 1))
login_fails("a client-final-message with a bad proof", "alice", "alice-secret",
            tamper=lambda m: m[:m.index(",p=") + 3] + "!!!!")
login_fails("a client-final-message without a proof", "alice", "alice-secret",
            tamper=lambda m: m[:m.index(",p=")])
bad_scram = [("an empty SCRAM message", b""),
                    ("a SCRAM message that is not SCRAM", b"hello"),
                    ("a client-first-message asking for channel binding", b"p=tls-unique,,n=alice,r=abc"),
                    ("a client-first-message with a NUL byte", b"n,,n=al\0ice,r=abc"),
                    ("a client-first-message without a nonce", b"n,,n=alice"),
                    ("a client-first-message with a bad saslname", b"n,,n=a=ZZ,r=abc"),
                    ("a client-first-message with the m= extension", b"m=x,n=alice,r=abc")]
if is_pg:  # Kafka answers it; kafka_pg keeps SCRAM messages to 1 kB
    bad_scram.append(("a 100 kB client-first-message", b"n,,n=alice,r=" + b"a" * 100000))
for name, token in bad_scram:
    c = conn()
    c.handshake("SCRAM-SHA-256")
    try:
        err, msg, _, _ = c.authenticate(token)
        check(name + " is refused", err != 0, err)
    except kraw.Closed:
        check(name + " closes the connection", True)
    check("... and the connection is closed", c.is_closed())
    c.close()
for name, token in [("an empty PLAIN message", b""), ("a PLAIN message without NULs", b"alice"),
                    ("a PLAIN message with another authzid", b"bob\0alice\0alice-secret")]:
    c = conn()
    c.handshake("PLAIN")
    try:
        err, msg, _, _ = c.authenticate(token)
        check(name + " is refused", err != 0, err)
    except kraw.Closed:
        check(name + " closes the connection", True)
    c.close()

# ---- raw: re-authentication (KIP-368) ----
c = conn()
c.handshake("SCRAM-SHA-256")
err, _, _ = kraw.scram_login(c, "alice", "alice-secret")
check("the broker still serves logins after the malformed ones", err == 0, err)
err, _ = c.handshake("SCRAM-SHA-256")
check("re-authentication: a second SaslHandshake is accepted", err == 0, err)
err, msg, life = kraw.scram_login(c, "alice", "alice-secret")
check("re-authentication as the same user", err == 0 and life == 3000, (err, msg, life))
check("... and the connection serves requests", len(c.metadata()) > 0)
c.close()

c = conn()
c.handshake("PLAIN")
err, msg, _, life = c.authenticate(b"\0alice\0alice-secret")
check("PLAIN login as alice", err == 0, (err, msg))
check("... Metadata answered", len(c.metadata()) > 0)
c.close()

# ---- real clients: confluent-kafka (librdkafka) ----
from confluent_kafka import Consumer, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402


def conf(mech, user, password, **extra):
    d = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL" if cafile else "SASL_PLAINTEXT",
         "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password}
    if cafile:
        d["ssl.ca.location"] = cafile
    d.update(extra)
    return d


for mech in ("SCRAM-SHA-256", "PLAIN"):
    topic = "sasl-%s-%s" % (mech.lower().replace("-", ""), uuid.uuid4().hex[:8])
    errors = []
    p = Producer(conf(mech, "alice", "alice-secret", error_cb=lambda e: errors.append(e)))
    p.produce(topic, b"first" + b"." * 300000)  # many TLS records
    left = p.flush(15)
    check("librdkafka %s: produce as alice" % mech, left == 0 and not errors, errors)
    time.sleep(3.5)  # past the session lifetime: librdkafka re-authenticates
    p.produce(topic, b"second")
    left = p.flush(15)
    check("librdkafka %s: produce again after the session lifetime (re-authenticated)" % mech,
          left == 0 and not [e for e in errors if "uthenticat" in str(e)], errors)
    cons = Consumer(conf(mech, "alice", "alice-secret", **{"group.id": "g-" + topic,
                                                            "auto.offset.reset": "earliest"}))
    cons.subscribe([topic])
    got = []
    deadline = time.time() + 30
    while len(got) < 2 and time.time() < deadline:
        m = cons.poll(1)
        if m is not None and not m.error():
            got.append(m.value())
    cons.close()
    check("librdkafka %s: consume both as alice" % mech,
          [g[:5] for g in got] == [b"first", b"secon"] and len(got[0]) == 300005, [len(g) for g in got])

    errors = []
    a = AdminClient(conf(mech, "alice", "wrong-password", error_cb=lambda e: errors.append(e)))
    try:
        a.list_topics(timeout=6)
        refused = False
    except KafkaException:
        refused = True
    check("librdkafka %s: a wrong password is refused" % mech, refused, errors[:1])

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
