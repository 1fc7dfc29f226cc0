// cairn serve driven by a client no one here wrote: iceberg-js, against two catalog processes
// (A and B) over one lake. Every step is made through one server and checked through the
// other, so nothing either process keeps in memory can pass for the state of the store.
//
// Environment: CAIRN_A_URL, CAIRN_B_URL (http://127.0.0.1:PORT), CAIRN_LAKE, CAIRN_TOKEN (a
// read-write token of that lake). Prints one line per step, then one JSON line for
// tests/cli/test_iceberg_js.py: {"ok": true, "tables": [{"name", "uuid", "accepted"}], ...},
// where "accepted" counts the commits that published a new metadata version of that table
// and "lake_changes" the requests that changed the lake's directory (namespaces and names);
// "contention_503" counts the commits refused with 503 too-much-contention (allowed, not
// expected: each such answer is the only 5xx the servers may give).
// Exits 1 at the first step that fails.
import { isDeepStrictEqual } from 'node:util';
import { IcebergError, IcebergRestCatalog } from 'iceberg-js';

const need = ['CAIRN_A_URL', 'CAIRN_B_URL', 'CAIRN_LAKE', 'CAIRN_TOKEN'];
for (const name of need) {
  if (!process.env[name]) {
    console.log(`FAIL: ${name} is not set (run through tests/cli/test_iceberg_js.py)`);
    process.exit(1);
  }
}
const LAKE = process.env.CAIRN_LAKE;

// One Idempotency-Key forced on the next mutation, to send one request twice (iceberg-js draws
// a fresh key for each call). Both catalogs share it.
let forcedKey = null;
function fetchWithForcedKey(url, init) {
  if (forcedKey && init?.headers?.['Idempotency-Key']) {
    init = { ...init, headers: { ...init.headers, 'Idempotency-Key': forcedKey } };
  }
  return globalThis.fetch(url, init);
}

function catalog(baseUrl) {
  return new IcebergRestCatalog({
    baseUrl,
    warehouse: LAKE,
    auth: { type: 'bearer', token: process.env.CAIRN_TOKEN },
    fetch: fetchWithForcedKey,
  });
}
const A = catalog(process.env.CAIRN_A_URL);
const B = catalog(process.env.CAIRN_B_URL);
const servers = [
  ['A', A],
  ['B', B],
];

// ---- checking ------------------------------------------------------------------------------

class CheckFailed extends Error {}

function check(cond, what) {
  if (!cond) throw new CheckFailed(what);
}

function show(v) {
  return JSON.stringify(v);
}

function same(got, expected, what) {
  check(isDeepStrictEqual(got, expected), `${what}: expected ${show(expected)}, got ${show(got)}`);
}

function describe(e) {
  if (e instanceof IcebergError) {
    return `IcebergError status=${e.status} type=${e.icebergType} code=${e.icebergCode} ` +
      `unknown=${e.isCommitStateUnknown} message=${show(e.message)} details=${show(e.details)}`;
  }
  return e?.stack ?? String(e);
}

function isRefusal(e, status, type) {
  return e instanceof IcebergError && e.status === status && e.icebergType === type &&
    e.isCommitStateUnknown === false;
}

// The IcebergError a call must fail with.
async function refused(call, status, type, what) {
  let result;
  try {
    result = await call();
  } catch (e) {
    check(isRefusal(e, status, type), `${what}: expected ${status} ${type}, got ${describe(e)}`);
    return e;
  }
  throw new CheckFailed(`${what}: expected ${status} ${type}, but it succeeded: ${show(result)}`);
}

let steps = 0;
async function step(name, body) {
  try {
    const detail = await body();
    steps += 1;
    console.log(`ok   ${String(steps).padStart(2)} ${name}${detail ? ` (${detail})` : ''}`);
  } catch (e) {
    console.log(`FAIL: ${name}: ${e instanceof CheckFailed ? e.message : describe(e)}`);
    process.exit(1);
  }
}

// Sorted, for order-free comparisons of lists of namespaces and identifiers.
function sorted(items) {
  return [...items].sort((x, y) => (show(x) < show(y) ? -1 : show(x) > show(y) ? 1 : 0));
}

function listed(list) {
  return sorted(list.namespaces.map((n) => n.namespace));
}

function schemaOf(metadata, id) {
  return metadata.schemas.find((s) => s['schema-id'] === id);
}

function fieldNames(schema) {
  return schema.fields.map((f) => f.name);
}

// ---- the lake ------------------------------------------------------------------------------

const SALES = ['sales'];
const OPS = ['ops'];
const RACE = ['race'];
const EMEA = ['sales', 'emea'];
const PARIS = ['sales', 'emea', 'paris'];
const salesProps = { owner: 'alice', description: 'sales data', region: 'global' };
const emeaProps = { owner: 'emil', region: 'emea' };
const parisProps = { city: 'Paris' };

const schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', type: 'int', required: true },
    { id: 2, name: 'customer', type: 'string', required: false },
    {
      id: 3,
      name: 'address',
      required: false,
      type: {
        type: 'struct',
        fields: [
          { id: 4, name: 'street', type: 'string', required: false },
          { id: 5, name: 'zip', type: 'int', required: false },
        ],
      },
    },
  ],
  'identifier-field-ids': [1],
};

const orders = { namespace: SALES, name: 'orders' };
const ordersRenamed = { namespace: SALES, name: 'orders_v2' };
const ordersMoved = { namespace: EMEA, name: 'orders' };
const customers = { namespace: SALES, name: 'customers' };

const tables = {}; // name -> {uuid, accepted}
let current = null; // the orders table's LoadTableResult as last seen
let accepted = 0; // commits to orders that published a new metadata version
let lakeChanges = 0; // requests that changed the lake's directory (each one record of its log)
let contention = 0; // commits answered 503 too-much-contention (nothing of them published)
const RACE_ROUNDS = 4;
const BURST = 3; // concurrent commits through each server

// A commit that must publish a new version; returns its CommitTableResponse.
async function commitNew(server, id, request, what) {
  const before = current['metadata-location'];
  const r = await server.commitTable(id, request);
  check(r['metadata-location'] && r['metadata-location'] !== before,
    `${what}: a new metadata location, got ${r['metadata-location']} (before ${before})`);
  same(r.metadata['table-uuid'], tables.orders.uuid, `${what}: table-uuid`);
  accepted += 1;
  current = r;
  return r;
}

// Both servers load the table as `current`, to the byte where the metadata is concerned.
async function bothSee(id, what) {
  for (const [label, server] of servers) {
    const r = await server.loadTableResult(id);
    same(r['metadata-location'], current['metadata-location'], `${what}: ${label}'s location`);
    same(r.metadata, current.metadata, `${what}: ${label}'s metadata`);
  }
}

await step('config through A and B: the prefix is the lake', async () => {
  for (const [label, server] of servers) {
    const config = await server.loadConfig();
    same(config.overrides?.prefix, LAKE, `${label}: overrides.prefix`);
    check(Array.isArray(config.endpoints) && config.endpoints.length > 0,
      `${label}: an endpoints list, got ${show(config.endpoints)}`);
    for (const route of ['POST /v1/{prefix}/namespaces/{namespace}/tables/{table}',
      'POST /v1/{prefix}/tables/rename']) {
      check(config.endpoints.includes(route), `${label}: endpoints names ${route}`);
    }
  }
  return `prefix ${LAKE}`;
});

await step('an empty lake lists no namespace through A and B', async () => {
  for (const [label, server] of servers) {
    same(listed(await server.listNamespaces()), [], `${label}: namespaces`);
  }
});

await step('create namespaces: sales and ops through A, sales.emea through B, ' +
  'sales.emea.paris through A', async () => {
  const made = [
    [A, SALES, salesProps],
    [A, OPS, undefined],
    [B, EMEA, emeaProps],
    [A, PARIS, parisProps],
  ];
  for (const [server, ns, properties] of made) {
    const r = await server.createNamespace({ namespace: ns },
      properties ? { properties } : undefined);
    same(r.namespace, ns, `created ${ns.join('.')}: namespace`);
    same(r.properties ?? {}, properties ?? {}, `created ${ns.join('.')}: properties`);
    lakeChanges += 1;
  }
  return '4 namespaces';
});

await step('create sales again through B: 409 AlreadyExistsException; ' +
  'createNamespaceIfNotExists passes', async () => {
  await refused(() => B.createNamespace({ namespace: SALES }, { properties: { x: 'y' } }),
    409, 'AlreadyExistsException', 'create sales twice');
  await B.createNamespaceIfNotExists({ namespace: SALES }, { properties: { x: 'y' } });
  same((await A.loadNamespaceMetadata({ namespace: SALES })).properties, salesProps,
    'sales keeps its first properties');
});

await step('list namespaces through A and B, top level and with a parent', async () => {
  for (const [label, server] of servers) {
    same(listed(await server.listNamespaces()), [OPS, SALES], `${label}: top level`);
    same(listed(await server.listNamespaces({ parent: { namespace: SALES } })), [EMEA],
      `${label}: under sales`);
    same(listed(await server.listNamespaces({ parent: { namespace: EMEA } })), [PARIS],
      `${label}: under sales.emea`);
    same(listed(await server.listNamespaces({ parent: { namespace: PARIS } })), [],
      `${label}: under sales.emea.paris`);
  }
  await refused(() => B.listNamespaces({ parent: { namespace: ['nowhere'] } }), 404,
    'NoSuchNamespaceException', 'list under a missing parent');
});

await step('namespace properties and existence, each read through the other server', async () => {
  same((await B.loadNamespaceMetadata({ namespace: SALES })).properties, salesProps, 'B: sales');
  same((await A.loadNamespaceMetadata({ namespace: EMEA })).properties, emeaProps, 'A: emea');
  same((await B.loadNamespaceMetadata({ namespace: PARIS })).properties, parisProps, 'B: paris');
  same((await A.loadNamespaceMetadata({ namespace: OPS })).properties, {}, 'A: ops');
  for (const [label, server] of servers) {
    for (const ns of [SALES, OPS, EMEA, PARIS]) {
      check(await server.namespaceExists({ namespace: ns }), `${label}: ${ns.join('.')} exists`);
    }
    check(!(await server.namespaceExists({ namespace: ['sales', 'apac'] })),
      `${label}: sales.apac does not exist`);
  }
  await refused(() => A.loadNamespaceMetadata({ namespace: ['sales', 'apac'] }), 404,
    'NoSuchNamespaceException', 'load a missing namespace');
});

await step('create table sales.orders through A (int, string, nested struct)', async () => {
  const r = await A.createTableResult({ namespace: SALES }, {
    name: 'orders',
    schema,
    properties: { 'created-by': 'iceberg-js' },
  });
  const m = r.metadata;
  const location = r['metadata-location'];
  check(typeof location === 'string' && location.endsWith('.metadata.json'),
    `a metadata location, got ${show(location)}`);
  check(typeof m['table-uuid'] === 'string' && m['table-uuid'].length === 36,
    `a table-uuid, got ${show(m['table-uuid'])}`);
  same(m['format-version'], 2, 'format-version');
  same(m['current-schema-id'], 0, 'current-schema-id');
  same(m['last-column-id'], 5, 'last-column-id');
  const s = schemaOf(m, 0);
  same(fieldNames(s), ['id', 'customer', 'address'], 'top-level columns');
  same(s.fields.map((f) => f.id), [1, 2, 3], 'column ids');
  same(s.fields[2].type.fields.map((f) => [f.id, f.name, f.type]),
    [[4, 'street', 'string'], [5, 'zip', 'int']], 'the nested struct');
  same(s['identifier-field-ids'], [1], 'identifier-field-ids');
  same(m.properties['created-by'], 'iceberg-js', 'the property sent');
  check(r.etag, 'an ETag header');
  current = r;
  lakeChanges += 1;
  tables.orders = { name: 'orders', uuid: m['table-uuid'], accepted: 0 };
  return `uuid ${m['table-uuid']}`;
});

await step('create the same table through B: 409 AlreadyExistsException', async () => {
  await refused(() => B.createTable({ namespace: SALES }, { name: 'orders', schema }), 409,
    'AlreadyExistsException', 'create sales.orders twice');
});

await step('load sales.orders through B: same metadata, same metadata-location', async () => {
  const r = await B.loadTableResult(orders);
  same(r['metadata-location'], current['metadata-location'], 'metadata-location');
  same(r.metadata, current.metadata, 'metadata');
  same(r.etag, current.etag, 'ETag');
  check(await B.tableExists(orders), 'B: tableExists');
  const unchanged = await B.loadTableResult(orders, { ifNoneMatch: r.etag });
  same(unchanged, null, 'a load with If-None-Match of the current ETag is 304');
});

await step('commit a property change through B', async () => {
  const r = await commitNew(B, orders, {
    requirements: [{ type: 'assert-table-uuid', uuid: tables.orders.uuid }],
    updates: [{ action: 'set-properties', updates: { comment: 'set through B' } }],
  }, 'set-properties through B');
  same(r.metadata.properties.comment, 'set through B', 'the property');
  same(r.metadata['current-schema-id'], 0, 'the schema is unchanged');
  return r['metadata-location'].split('/').pop();
});

await step('commit a schema change through A (add-schema, set-current-schema -1, ' +
  'assert-current-schema-id 0)', async () => {
  const fields = [...schema.fields, { id: 6, name: 'amount', type: 'double', required: false }];
  const r = await commitNew(A, orders, {
    requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 0 }],
    updates: [
      {
        action: 'add-schema',
        schema: { type: 'struct', 'schema-id': 1, fields, 'identifier-field-ids': [1] },
      },
      { action: 'set-current-schema', 'schema-id': -1 },
    ],
  }, 'schema change through A');
  const m = r.metadata;
  same(m['current-schema-id'], 1, 'current-schema-id');
  same(m['last-column-id'], 6, 'last-column-id');
  same(m.schemas.length, 2, 'both schemas kept');
  same(fieldNames(schemaOf(m, 1)), ['id', 'customer', 'address', 'amount'], 'the new columns');
  same(m.properties.comment, 'set through B', "A's commit keeps B's property");
  return r['metadata-location'].split('/').pop();
});

await step('load through the other servers: both changes seen by A and by B', async () => {
  await bothSee(orders, 'after both commits');
  const m = current.metadata;
  same(m.properties.comment, 'set through B', 'the property');
  same(m['current-schema-id'], 1, 'the new schema');
  same(m['metadata-log'].length, 2, 'two earlier versions in metadata-log');
});

await step('a commit through B with a stale requirement: 409 CommitFailedException', async () => {
  const before = current['metadata-location'];
  await refused(() => B.commitTable(orders, {
    requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 0 }],
    updates: [{ action: 'set-properties', updates: { stale: 'yes' } }],
  }), 409, 'CommitFailedException', 'stale assert-current-schema-id through B');
  await refused(() => A.commitTable(orders, {
    requirements: [{ type: 'assert-table-uuid', uuid: '00000000-0000-4000-8000-000000000000' }],
    updates: [{ action: 'set-properties', updates: { stale: 'yes' } }],
  }), 409, 'CommitFailedException', 'wrong assert-table-uuid through A');
  await bothSee(orders, 'after the refused commits');
  check(!('stale' in current.metadata.properties) && current['metadata-location'] === before,
    'nothing of the refused commits is published');
});

await step('a commit that changes nothing publishes nothing', async () => {
  const r = await A.commitTable(orders, {
    requirements: [],
    updates: [{ action: 'set-properties', updates: { comment: 'set through B' } }],
  });
  same(r['metadata-location'], current['metadata-location'], 'the same metadata location');
  await bothSee(orders, 'after the no-op commit');
});

await step('one commit sent twice with one Idempotency-Key, through A then B: ' +
  'published once', async () => {
  forcedKey = '01900000-0000-7000-8000-00000000c0de';
  try {
    const request = {
      requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 1 }],
      updates: [{ action: 'set-properties', updates: { replayed: 'once' } }],
    };
    const first = await commitNew(A, orders, request, 'the first send through A');
    const again = await B.commitTable(orders, request);
    same(again['metadata-location'], first['metadata-location'],
      'the repeat answers with the first result');
  } finally {
    forcedKey = null;
  }
  await bothSee(orders, 'after the repeat');
  same(current.metadata['metadata-log'].length, 3, 'one more version, not two');
});

// Both servers at once: [{label, value}] or [{label, error}], in the order given.
function race(calls) {
  return Promise.all(calls.map(([label, call]) =>
    call().then((value) => ({ label, value }), (error) => ({ label, error }))));
}

function outcomes(results) {
  return show(results.map((x) => `${x.label}: ${x.error ? describe(x.error) : 'accepted'}`));
}

await step(`racing schema changes, ${RACE_ROUNDS} rounds: A and B both add a column asserting ` +
  'the same current schema; exactly one wins each round, the other gets 409', async () => {
  const wins = [];
  for (let round = 0; round < RACE_ROUNDS; round += 1) {
    const base = current.metadata;
    const schemaId = base['current-schema-id'];
    const fields = schemaOf(base, schemaId).fields;
    const request = (label) => ({
      requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': schemaId }],
      updates: [
        {
          action: 'add-schema',
          schema: {
            type: 'struct',
            'schema-id': schemaId + 1,
            fields: [...fields, {
              id: base['last-column-id'] + 1, name: `race_${round}_${label}`, type: 'long',
              required: false,
            }],
            'identifier-field-ids': [1],
          },
        },
        { action: 'set-current-schema', 'schema-id': -1 },
      ],
    });
    const results = await race([['A', () => A.commitTable(orders, request('A'))],
      ['B', () => B.commitTable(orders, request('B'))]]);
    const won = results.filter((x) => !x.error);
    const lost = results.filter((x) => x.error);
    check(won.length === 1 && lost.length === 1,
      `round ${round}: one winner, got ${outcomes(results)}`);
    check(isRefusal(lost[0].error, 409, 'CommitFailedException'),
      `round ${round}: the loser gets 409 CommitFailedException, got ${outcomes(results)}`);
    accepted += 1;
    current = won[0].value;
    await bothSee(orders, `round ${round}`);
    const names = fieldNames(schemaOf(current.metadata, current.metadata['current-schema-id']));
    check(names.includes(`race_${round}_${won[0].label}`) &&
      !names.includes(`race_${round}_${lost[0].label}`),
    `round ${round}: the winner's column only, got ${show(names)}`);
    wins.push(won[0].label);
  }
  return `winners ${wins.join(' ')}`;
});

await step(`${2 * BURST} independent commits at once, ${BURST} through A and ${BURST} through ` +
  'B: each lands once (or is refused 503 with nothing published)', async () => {
  const calls = [];
  for (let i = 0; i < 2 * BURST; i += 1) {
    const [label, server] = servers[i % 2];
    calls.push([`${label}${i}`, () => server.commitTable(orders, {
      requirements: [{ type: 'assert-table-uuid', uuid: tables.orders.uuid }],
      updates: [{ action: 'set-properties', updates: { [`burst-${i}`]: label } }],
    })]);
  }
  const results = await race(calls);
  const locations = new Set();
  let landed = 0;
  for (const x of results) {
    if (x.error) {
      check(isRefusal(x.error, 503, 'ServiceUnavailableException'),
        `${x.label}: accepted, or 503 too-much-contention; got ${describe(x.error)}`);
      contention += 1;
    } else {
      locations.add(x.value['metadata-location']);
      landed += 1;
    }
  }
  check(locations.size === landed, `each accepted commit has a metadata location of its own`);
  accepted += landed;
  current = await A.loadTableResult(orders);
  await bothSee(orders, 'after the burst');
  const props = current.metadata.properties;
  results.forEach((x, i) => {
    check(('burst-' + i in props) === !x.error,
      `burst-${i} is in the table exactly when its commit was accepted (${show(props)})`);
  });
  check(locations.has(current['metadata-location']), 'the last version is one of the burst');
  return `${landed} accepted, ${contention} refused for contention`;
});

await step('A and B create the namespace race at once: one 200, one 409', async () => {
  const results = await race([
    ['A', () => A.createNamespace({ namespace: RACE }, { properties: { by: 'A' } })],
    ['B', () => B.createNamespace({ namespace: RACE }, { properties: { by: 'B' } })]]);
  const won = results.filter((x) => !x.error);
  const lost = results.filter((x) => x.error);
  check(won.length === 1 && lost.length === 1 &&
    isRefusal(lost[0].error, 409, 'AlreadyExistsException'),
  `one winner and one 409, got ${outcomes(results)}`);
  lakeChanges += 1;
  for (const [label, server] of servers) {
    same((await server.loadNamespaceMetadata({ namespace: RACE })).properties,
      { by: won[0].label }, `${label}: the winner's properties`);
  }
  return `won by ${won[0].label}`;
});

await step('create sales.customers through B; list tables through A and B', async () => {
  const m = await B.createTable({ namespace: SALES }, { name: 'customers', schema });
  tables.customers = { name: 'customers', uuid: m['table-uuid'], accepted: 0 };
  lakeChanges += 1;
  check(m['table-uuid'] !== tables.orders.uuid, 'a table-uuid of its own');
  for (const [label, server] of servers) {
    same(sorted((await server.listTables({ namespace: SALES })).identifiers),
      sorted([customers, orders]), `${label}: tables in sales`);
    same((await server.listTables({ namespace: EMEA })).identifiers, [],
      `${label}: tables in sales.emea`);
  }
  await refused(() => A.listTables({ namespace: ['nowhere'] }), 404, 'NoSuchNamespaceException',
    'list tables of a missing namespace');
  return `uuid ${m['table-uuid']}`;
});

// After a rename, exactly `at` holds the table, seen through both servers.
async function onlyAt(at, gone, what) {
  for (const [label, server] of servers) {
    for (const id of gone) {
      check(!(await server.tableExists(id)),
        `${what}: ${label} says ${id.namespace.join('.')}.${id.name} does not exist`);
    }
    check(await server.tableExists(at),
      `${what}: ${label} says ${at.namespace.join('.')}.${at.name} exists`);
  }
  await bothSee(at, what);
}

await step('rename sales.orders to sales.orders_v2 through A', async () => {
  await A.renameTable({ source: orders, destination: ordersRenamed });
  lakeChanges += 1;
  await onlyAt(ordersRenamed, [orders], 'after the rename');
  await refused(() => B.loadTable(orders), 404, 'NoSuchTableException', 'load the old name');
  for (const [label, server] of servers) {
    same(sorted((await server.listTables({ namespace: SALES })).identifiers),
      sorted([customers, ordersRenamed]), `${label}: tables in sales`);
  }
});

await step('renames that must fail: onto a taken name (409), from a missing one (404), ' +
  'into a missing namespace (404)', async () => {
  await refused(() => B.renameTable({ source: ordersRenamed, destination: customers }), 409,
    'AlreadyExistsException', 'rename onto sales.customers');
  await refused(() => B.renameTable({ source: orders, destination: ordersMoved }), 404,
    'NoSuchTableException', 'rename the old name');
  const nowhere = { namespace: ['nowhere'], name: 'x' };
  await refused(() => A.renameTable({ source: ordersRenamed, destination: nowhere }), 404,
    'NoSuchNamespaceException', 'rename into a missing namespace');
  await onlyAt(ordersRenamed, [orders, ordersMoved], 'after the refused renames');
});

await step('rename sales.orders_v2 into the nested namespace (sales.emea.orders) through B',
  async () => {
    await B.renameTable({ source: ordersRenamed, destination: ordersMoved });
    lakeChanges += 1;
    await onlyAt(ordersMoved, [orders, ordersRenamed], 'after the move');
    for (const [label, server] of servers) {
      same((await server.listTables({ namespace: SALES })).identifiers, [customers],
        `${label}: tables in sales`);
      same((await server.listTables({ namespace: EMEA })).identifiers, [ordersMoved],
        `${label}: tables in sales.emea`);
    }
    same(current.metadata['table-uuid'], tables.orders.uuid, 'the same table');
  });

await step('commit under the new name through A; the old name is 404 through B', async () => {
  await commitNew(A, ordersMoved, {
    requirements: [{ type: 'assert-table-uuid', uuid: tables.orders.uuid }],
    updates: [{ action: 'set-properties', updates: { moved: 'sales.emea' } },
      { action: 'remove-properties', removals: ['replayed'] }],
  }, 'commit after the move');
  await refused(() => B.commitTable(ordersRenamed, {
    requirements: [],
    updates: [{ action: 'set-properties', updates: { lost: 'yes' } }],
  }), 404, 'NoSuchTableException', 'commit to a name renamed away');
  await bothSee(ordersMoved, 'after the commit under the new name');
  same(current.metadata.properties.moved, 'sales.emea', 'the new property');
  check(!('replayed' in current.metadata.properties), 'the removed property');
});

await step('update namespace properties of sales through B, read through A', async () => {
  const r = await B.updateNamespaceProperties({ namespace: SALES }, {
    removals: ['description', 'not-there'],
    updates: { owner: 'bob', tier: 'gold' },
  });
  same(sorted(r.updated), ['owner', 'tier'], 'updated');
  same(r.removed, ['description'], 'removed');
  same(r.missing, ['not-there'], 'missing');
  lakeChanges += 1;
  const expected = { owner: 'bob', region: 'global', tier: 'gold' };
  same((await A.loadNamespaceMetadata({ namespace: SALES })).properties, expected, 'A: sales');
  same((await B.loadNamespaceMetadata({ namespace: SALES })).properties, expected, 'B: sales');
  await refused(() => A.updateNamespaceProperties({ namespace: SALES },
    { removals: ['tier'], updates: { tier: 'silver' } }), 422, 'UnprocessableEntityException',
  'a key both updated and removed');
  await refused(() => A.updateNamespaceProperties({ namespace: ['nowhere'] },
    { updates: { a: 'b' } }), 404, 'NoSuchNamespaceException', 'a missing namespace');
});

await step('drop namespaces that are not empty: 409 NamespaceNotEmptyException', async () => {
  await refused(() => A.dropNamespace({ namespace: EMEA }), 409, 'NamespaceNotEmptyException',
    'drop sales.emea with a table in it');
  await refused(() => B.dropNamespace({ namespace: SALES }), 409, 'NamespaceNotEmptyException',
    'drop sales with tables and namespaces in it');
});

await step('drop sales.emea.orders (purge false) through A; gone through B', async () => {
  await A.dropTable(ordersMoved, { purge: false });
  lakeChanges += 1;
  for (const [label, server] of servers) {
    check(!(await server.tableExists(ordersMoved)), `${label}: sales.emea.orders is gone`);
    same((await server.listTables({ namespace: EMEA })).identifiers, [],
      `${label}: tables in sales.emea`);
  }
  await refused(() => B.loadTable(ordersMoved), 404, 'NoSuchTableException', 'B: load');
  await refused(() => B.dropTable(ordersMoved, { purge: false }), 404, 'NoSuchTableException',
    'B: drop again');
  await refused(() => B.commitTable(ordersMoved, {
    requirements: [],
    updates: [{ action: 'set-properties', updates: { dropped: 'yes' } }],
  }), 404, 'NoSuchTableException', 'B: commit to the dropped table');
});

await step('drop sales.customers with purge through B (its files go by cairn lake gc)',
  async () => {
    check(await B.tableExists(customers), 'sales.customers is there');
    await B.dropTable(customers, { purge: true });
    lakeChanges += 1;
    await refused(() => A.dropTable(customers, { purge: true }), 404, 'NoSuchTableException',
      'A: drop with purge again');
    for (const [label, server] of servers) {
      check(!(await server.tableExists(customers)), `${label}: sales.customers is gone`);
      same((await server.listTables({ namespace: SALES })).identifiers, [],
        `${label}: tables in sales`);
    }
  });

await step('drop the namespaces, deepest first, alternating servers; gone through the other',
  async () => {
    const order = [[B, A, PARIS], [A, B, EMEA], [B, A, SALES], [A, B, OPS], [B, A, RACE]];
    for (const [dropper, other, ns] of order) {
      await dropper.dropNamespace({ namespace: ns });
      lakeChanges += 1;
      check(!(await other.namespaceExists({ namespace: ns })), `${ns.join('.')} is gone`);
      await refused(() => other.loadNamespaceMetadata({ namespace: ns }), 404,
        'NoSuchNamespaceException', `load ${ns.join('.')}`);
    }
    await refused(() => B.dropNamespace({ namespace: OPS }), 404, 'NoSuchNamespaceException',
      'drop ops again');
    for (const [label, server] of servers) {
      same(listed(await server.listNamespaces()), [], `${label}: no namespace left`);
    }
  });

tables.orders.accepted = accepted;
console.log(JSON.stringify({
  ok: true,
  steps,
  lake_changes: lakeChanges,
  contention_503: contention,
  tables: [tables.orders, tables.customers],
  orders_metadata_location: current['metadata-location'],
}));
