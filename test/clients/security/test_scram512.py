#!/usr/bin/python3
"""SCRAM-SHA-512 credentials set over the wire, the same checks on Apache Kafka and kafka_pg.

    test_scram512.py HOST:PORT ADMIN_PROPERTIES [--kafka_pg PGPORT PGDATABASE]

The broker is SASL_PLAINTEXT with SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN enabled; user alice
(password alice-secret, SCRAM-SHA-256 and PLAIN) exists; ADMIN_PROPERTIES logs kafka-configs.sh
in as an administrator (on kafka_pg a kafka_admin member; dan, password dan-secret, has no rights).  KAFKA_SH is test/clients/kafka/kafka.sh.

- kafka-configs --alter --add-config 'SCRAM-SHA-512=[iterations=4096,password=...]' for alice, then
  --describe shows SCRAM-SHA-512 with 4096 iterations (beside SCRAM-SHA-256);
- librdkafka (confluent-kafka) produces and consumes as alice with SCRAM-SHA-512; a wrong password
  is refused; the SCRAM-SHA-256 login still works;
- raw AlterUserScramCredentials: too few iterations, an unknown mechanism, an empty user name and
  one user twice get Kafka's error codes and messages;
- --delete-config SCRAM-SHA-512: the SCRAM-SHA-512 login is refused afterwards;
- kafka_pg only: dan, no administrator, may not alter credentials (CLUSTER_AUTHORIZATION_FAILED),
  and a kafka_admin member may not alter a superuser's; while a SQL transaction still open has
  changed a role's password (ALTER ROLE), AlterUserScramCredentials of it answers REQUEST_TIMED_OUT
  after 5 s and other connections are answered meanwhile (until 2026-12-06 the listener worker
  waited in the role's row lock), and after the COMMIT it succeeds.  Run with
  kafka.connections_max_reauth_ms 3 s, the request's later runs come after its SASL session ended:
  it is still answered, as Kafka answers a request it read before the session ended (until
  2026-12-06 the connection was closed).
Prints "ok"/"not ok" lines and "N passed, M failed".
"""
import os
import struct
import subprocess
import sys
import threading
import time
import uuid

import kraw

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

bootstrap = sys.argv[1]
admin_props = sys.argv[2]
is_pg = "--kafka_pg" in sys.argv
KAFKA_SH = os.environ["KAFKA_SH"]

passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + name, flush=True)
    else:
        failed += 1
        print("not ok - %s %s" % (name, detail), flush=True)


def configs(props, *args):
    p = subprocess.run([KAFKA_SH, "cli", "kafka-configs", "--bootstrap-server", bootstrap,
                        "--command-config", props] + list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def conf(mech, user, password, **extra):
    d = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
         "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password}
    d.update(extra)
    return d


def login_works(mech, user, password):
    errors = []
    a = AdminClient(conf(mech, user, password, error_cb=lambda e: errors.append(e)))
    try:
        a.list_topics(timeout=8)
        return True
    except KafkaException:
        return False


rc, out = configs(admin_props, "--alter", "--entity-type", "users", "--entity-name", "alice",
                  "--add-config", "SCRAM-SHA-512=[iterations=4096,password=alice-512-secret]")
check("kafka-configs --alter --add-config SCRAM-SHA-512=[iterations=4096,...] for alice", rc == 0, out[-400:])
time.sleep(1)
rc, out = configs(admin_props, "--describe", "--entity-type", "users", "--entity-name", "alice")
check("kafka-configs --describe shows SCRAM-SHA-512 with 4096 iterations beside SCRAM-SHA-256",
      rc == 0 and "SCRAM-SHA-512=iterations=4096" in out and "SCRAM-SHA-256=iterations=" in out, out[-400:])

topic = "scram512-" + uuid.uuid4().hex[:8]
errors = []
p = Producer(conf("SCRAM-SHA-512", "alice", "alice-512-secret", error_cb=lambda e: errors.append(e)))
p.produce(topic, b"one")
p.produce(topic, b"two")
left = p.flush(20)
check("librdkafka SCRAM-SHA-512: produce as alice", left == 0 and not errors, errors[:2])
cons = Consumer(conf("SCRAM-SHA-512", "alice", "alice-512-secret",
                     **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
cons.subscribe([topic])
got = []
deadline = time.time() + 30
while len(got) < 2 and time.time() < deadline:
    m = cons.poll(1)
    if m is not None and not m.error():
        got.append(m.value())
cons.close()
check("librdkafka SCRAM-SHA-512: consume both as alice", got == [b"one", b"two"], got)
check("librdkafka SCRAM-SHA-512: a wrong password is refused",
      not login_works("SCRAM-SHA-512", "alice", "wrong-password"))
check("librdkafka SCRAM-SHA-512: the SCRAM-SHA-256 password is not the SCRAM-SHA-512 one",
      not login_works("SCRAM-SHA-512", "alice", "alice-secret"))
check("librdkafka SCRAM-SHA-256 login as alice still works", login_works("SCRAM-SHA-256", "alice", "alice-secret"))



def uvarint(v):
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def cstr(b):
    return uvarint(len(b) + 1) + b


def raw_alter(upsertions):
    """AlterUserScramCredentials v0 (flexible) as admin over PLAIN: [(user, mechanism, iterations,
    salt, salted_password)] -> [(user, error_code, message)]"""
    admin_user, admin_pw = [line.split('"')[1::2] for line in open(admin_props)
                            if "jaas" in line][0][:2]
    host, port = bootstrap.rsplit(":", 1)
    c = kraw.Conn(int(port), host)
    err, _ = c.handshake("PLAIN")
    err2 = c.authenticate(b"\0" + admin_user.encode() + b"\0" + admin_pw.encode())[0]
    if err or err2:
        return [("login", err, err2)]
    body = b"\x00"  # request header v2 tagged fields
    body += uvarint(1)  # no deletions
    body += uvarint(len(upsertions) + 1)
    for user, mech, it, salt, salted in upsertions:
        body += cstr(user.encode()) + struct.pack(">bi", mech, it) + cstr(salt) + cstr(salted) + b"\x00"
    body += b"\x00"
    c.send(51, 0, body)
    _, data = c.recv()
    p = 1 + 4  # response header tagged fields, throttle
    out = []

    def varint():
        nonlocal p
        v = shift = 0
        while True:
            b = data[p]
            p += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v

    for _ in range(varint() - 1):
        n = varint() - 1
        user = data[p:p + n].decode()
        p += n
        code = struct.unpack(">h", data[p:p + 2])[0]
        p += 2
        n = varint() - 1
        msg = data[p:p + n].decode() if n >= 0 else None
        p += max(n, 0)
        varint()  # tagged fields
        out.append((user, code, msg))
    c.close()
    return out


def check_role_locked(pg_port, pg_db):
    """A role whose password a SQL transaction still open changed (kafka_pg only)."""
    def psql(*args):
        return subprocess.Popen(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                                 "-p", pg_port, "-U", "postgres", "-d", pg_db] + list(args),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    role = "erin_" + uuid.uuid4().hex[:6]
    out = psql("-c", f"CREATE ROLE {role} LOGIN PASSWORD 'erin-secret'").communicate()[0]
    check("kafka_pg: role %s created" % role, "ERROR" not in out, out)
    holder = psql("-c", f"BEGIN; ALTER ROLE {role} PASSWORD 'erin-other'; SELECT pg_sleep(9); COMMIT")
    time.sleep(1)
    host, port = bootstrap.rsplit(":", 1)
    pings, stop = [], threading.Event()

    def ping():
        conns = [kraw.Conn(int(port), host) for _ in range(4)]
        while not stop.is_set():
            for c in conns:
                t = time.time()
                try:
                    c.api_versions()
                    pings.append(time.time() - t)
                except Exception:
                    pings.append(float("inf"))
            time.sleep(0.1)
    th = threading.Thread(target=ping, daemon=True)
    th.start()
    t = time.time()
    res = raw_alter([(role, 1, 4096, b"salt", bytes(32))])
    took = time.time() - t
    stop.set()
    th.join(10)
    check("kafka_pg: while an open transaction changed a role's password, AlterUserScramCredentials of it "
          "answers REQUEST_TIMED_OUT after 5 s, saying why",
          len(res) == 1 and res[0][1] == 7 and "another transaction" in (res[0][2] or "") and 4.8 <= took < 8.5,
          (res, round(took, 2)))
    check("kafka_pg: ... and meanwhile 4 other connections were each answered within 0.5 s",
          pings and max(pings) < 0.5, "(%d answers, slowest %.2f s)" % (len(pings), max(pings or [0])))
    holder.communicate(timeout=30)
    res = raw_alter([(role, 1, 4096, b"salt", bytes(32))])
    check("kafka_pg: ... and after the COMMIT it succeeds", [r[1] for r in res] == [0], res)
    psql("-c", f"DROP ROLE {role}").communicate()


res = raw_alter([("alice", 2, 100, b"salt", bytes(64)), ("bob-" + uuid.uuid4().hex[:4], 3, 4096, b"s", bytes(64)),
                 ("", 2, 4096, b"s", bytes(64))])
codes = sorted((c, m) for _, c, m in res)
check("AlterUserScramCredentials: too few iterations UNACCEPTABLE_CREDENTIAL, an unknown mechanism "
      "UNSUPPORTED_SASL_MECHANISM, an empty user UNACCEPTABLE_CREDENTIAL (Kafka's messages)",
      (93, "Too few iterations") in codes and (33, "Unknown SCRAM mechanism") in codes and
      (93, "Username must not be empty") in codes, res)
res = raw_alter([("alice", 2, 4096, b"salt", bytes(64)), ("alice", 1, 4096, b"salt", bytes(32))])
check("AlterUserScramCredentials: one user twice is DUPLICATE_RESOURCE",
      len(res) == 1 and res[0][1] == 92, res)
check("... and alice's SCRAM-SHA-512 password is unchanged", login_works("SCRAM-SHA-512", "alice", "alice-512-secret"))

if is_pg:
    dan_props = admin_props + ".dan"
    with open(dan_props, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
                'username="dan" password="dan-secret";\n')
    rc, out = configs(dan_props, "--alter", "--entity-type", "users", "--entity-name", "alice",
                      "--add-config", "SCRAM-SHA-512=[iterations=4096,password=mine]")
    check("kafka_pg: dan (no superuser, no kafka_admin, no CLUSTER ALTER) may not alter credentials",
          rc != 0 and "ClusterAuthorization" in out, out[-400:])
    check("... and alice's SCRAM-SHA-512 password is unchanged", login_works("SCRAM-SHA-512", "alice", "alice-512-secret"))
    rc, out = configs(admin_props, "--alter", "--entity-type", "users", "--entity-name", "postgres",
                      "--add-config", "SCRAM-SHA-512=[iterations=4096,password=mine]")
    check("kafka_pg: a kafka_admin member may not alter a superuser's credentials",
          rc != 0 and "only a superuser may alter the SCRAM credentials of a superuser" in out, out[-400:])
    check_role_locked(*sys.argv[sys.argv.index("--kafka_pg") + 1:sys.argv.index("--kafka_pg") + 3])

rc, out = configs(admin_props, "--alter", "--entity-type", "users", "--entity-name", "alice",
                  "--delete-config", "SCRAM-SHA-512")
time.sleep(1)
check("kafka-configs --delete-config SCRAM-SHA-512", rc == 0, out[-400:])
check("... then the SCRAM-SHA-512 login is refused", not login_works("SCRAM-SHA-512", "alice", "alice-512-secret"))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
