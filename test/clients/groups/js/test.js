// kafkajs 2.2.4 consumer-group tests against $KAFKA_BOOTSTRAP (KAFKAJS_LOG=1: the client's log).
// Last line: "N passed, M failed".
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const BOOTSTRAP = process.env.KAFKA_BOOTSTRAP || '127.0.0.1:9092';
const RUN = Math.random().toString(36).slice(2, 10);
const kafka = new Kafka({ clientId: 'groups-js', brokers: BOOTSTRAP.split(','), logLevel: process.env.KAFKAJS_LOG ? logLevel.INFO : logLevel.NOTHING });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, cond, state, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; now: ${state()}`);
    await sleep(50);
  }
}

async function createTopic(topic, partitions) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true });
  } finally { await admin.disconnect(); }
}

async function produce(topic, partitions, n, prefix) {
  const p = kafka.producer();
  await p.connect();
  try {
    const messages = [];
    for (let i = 0; i < n; i++) messages.push({ key: `${prefix}${i}`, value: `value-${i}`, partition: i % partitions });
    await p.send({ topic, messages, acks: -1 });
  } finally { await p.disconnect(); }
}

// A member that reads with eachMessage and commits each message's next offset itself.
async function member(groupId, topic) {
  const m = { records: [], assignment: [], consumer: kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 1000 }) };
  m.consumer.on(m.consumer.events.GROUP_JOIN, (e) => { m.assignment = e.payload.memberAssignment[topic] || []; });
  m.consumer.on(m.consumer.events.CRASH, (e) => { console.log(`consumer crash: ${e.payload.error}`); });
  await m.consumer.connect();
  await m.consumer.subscribe({ topic, fromBeginning: true });
  await m.consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic: t, partition, message }) => {
      m.records.push(message.key.toString());
      await m.consumer.commitOffsets([{ topic: t, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
    },
  });
  return m;
}

const show = (ms) => JSON.stringify(ms.map((m) => ({ parts: m.assignment, recs: m.records.length })));

async function groupOfTwoCommitsAndResumes() {
  const topic = `grp-js-two-${RUN}`, group = `g-${topic}`;
  await createTopic(topic, 4);
  await produce(topic, 4, 200, 'k');
  const ms = [await member(group, topic), await member(group, topic)];
  try {
    await waitFor('2/2 split', () => ms.every((m) => m.assignment.length === 2) &&
      new Set(ms.flatMap((m) => m.assignment)).size === 4, () => show(ms));
    await waitFor('200 records', () => ms.reduce((s, m) => s + m.records.length, 0) >= 200, () => show(ms));
    await sleep(1500);
  } finally { for (const m of ms) await m.consumer.disconnect(); }
  const keys = ms.flatMap((m) => m.records);
  if (keys.length !== 200 || new Set(keys).size !== 200) throw new Error(`${keys.length} records, ${new Set(keys).size} keys: ${show(ms)}`);
  await produce(topic, 4, 50, 'late');
  const again = await member(group, topic);
  try {
    await waitFor('the 50 new records', () => again.records.length >= 50, () => show([again]));
    await sleep(2000);
  } finally { await again.consumer.disconnect(); }
  const got = again.records.slice().sort().join(',');
  const want = Array.from({ length: 50 }, (_, i) => `late${i}`).sort().join(',');
  if (got !== want) throw new Error(`resumed with ${again.records.length} records: ${again.records.slice(0, 5)}...`);
}

async function main() {
  let passed = 0, failed = 0;
  for (const [name, t] of [['group_of_two_commits_and_resumes', groupOfTwoCommitsAndResumes]]) {
    const t0 = Date.now();
    try {
      await t();
      passed++;
      console.log(`ok   kafkajs ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
    } catch (e) {
      failed++;
      console.log(`FAIL kafkajs ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s): ${e.stack || e}`);
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
main();
