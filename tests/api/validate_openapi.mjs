// docs/openapi.json checked by real validators from npm (web/package.json; scripts/setup.sh --browser
// runs npm ci):
//   1. the document against the OpenAPI 3.1 schema (@seriousme/openapi-schema-validator), and a
//      broken copy of it is refused (the check can fail);
//   2. with --bodies FILE: every JSON exchange recorded there (JSON lines {method, path, status,
//      request, response}: the Python client's record_to, written by its suite against a real
//      jobctld) validated against the schemas the document gives its route and status (Ajv, JSON
//      Schema 2020-12, the dialect of OpenAPI 3.1). A recorded route the document lacks, or a
//      status it does not describe, fails too.
//
// Usage: node validate_openapi.mjs --document docs/openapi.json --modules web/node_modules [--bodies FILE]
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['document', 'modules']) {
  if (!args[k]) { console.error(`usage: --document FILE --modules DIR [--bodies FILE] (missing --${k})`); process.exit(2); }
}
if (!existsSync(path.join(args.modules, '@seriousme', 'openapi-schema-validator'))) {
  console.error(`${args.modules} lacks @seriousme/openapi-schema-validator: run scripts/setup.sh --browser (npm ci in web/)`);
  process.exit(1);
}
const require = createRequire(path.join(path.resolve(args.modules), 'noop.js'));
const { Validator } = await import(pathToFileURL(require.resolve('@seriousme/openapi-schema-validator')).href);
const Ajv2020 = require('ajv/dist/2020').default;

let failures = 0;
const fail = (message) => { console.error('FAIL: ' + message); failures += 1; };

// 1. The document.
const document = JSON.parse(readFileSync(args.document, 'utf8'));
const validator = new Validator();
const result = await validator.validate(structuredClone(document));
if (!result.valid) fail(`${args.document} is not a valid OpenAPI document:\n${JSON.stringify(result.errors, null, 2)}`);
else console.log(`${args.document}: a valid OpenAPI ${validator.version} document, ${Object.keys(document.paths).length} paths`);
const broken = structuredClone(document);
delete broken.paths['/v1/jobs'].post.responses;
broken.paths['/v1/jobs'].get.parameters[0].in = 'nowhere';
if ((await new Validator().validate(broken)).valid) fail('a broken copy of the document (no responses, a parameter in "nowhere") was accepted');

// 2. The recorded bodies.
if (args.bodies) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema(document, 'openapi');
  const pointer = (...parts) => 'openapi#/' + parts.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
  const templates = Object.keys(document.paths).map((t) => ({
    template: t,
    regex: new RegExp('^' + t.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+') + '$'),
  }));
  const check = (ref, value, what) => {
    const validate = ajv.getSchema(ref);
    if (!validate(value)) fail(`${what}: ${ajv.errorsText(validate.errors)}\n  ${JSON.stringify(value).slice(0, 400)}`);
  };
  // The check can fail: a wrong body is refused.
  const errorSchema = ajv.getSchema(pointer('components', 'schemas', 'Error'));
  if (errorSchema({ error: { code: 5 } })) fail('the Error schema accepted {"error": {"code": 5}}');

  const counts = {};
  const lines = readFileSync(args.bodies, 'utf8').split('\n').filter((l) => l.trim() !== '');
  for (const line of lines) {
    const r = JSON.parse(line);
    const route = templates.find((t) => t.regex.test(r.path.split('?')[0]));
    const method = r.method.toLowerCase();
    const what = `${r.method} ${r.path} -> ${r.status}`;
    const operation = route && document.paths[route.template][method];
    if (!operation) { fail(`${what}: docs/openapi.json does not describe this route`); continue; }
    const key = `${r.method} ${route.template} ${r.status}`;
    counts[key] = (counts[key] || 0) + 1;
    // A request jobctld refused need not match (a test sends wrong ones on purpose); one it
    // accepted must.
    if (r.request !== null && r.request !== undefined && r.status < 400) {
      const content = operation.requestBody && operation.requestBody.content['application/json'];
      if (!content) fail(`${what}: a JSON request body the document does not describe`);
      else check(pointer('paths', route.template, method, 'requestBody', 'content', 'application/json', 'schema'), r.request, `${what} request`);
    }
    const status = String(r.status) in operation.responses ? String(r.status) : (r.status >= 400 ? 'default' : null);
    if (status === null) { fail(`${what}: the document describes no ${r.status} answer`); continue; }
    if (r.response !== null && r.response !== undefined) {
      const content = operation.responses[status].content && operation.responses[status].content['application/json'];
      if (!content) fail(`${what}: a JSON answer the document does not describe`);
      else check(pointer('paths', route.template, method, 'responses', status, 'content', 'application/json', 'schema'), r.response, `${what} answer`);
    }
  }
  for (const [key, n] of Object.entries(counts).sort()) console.log(`  ${n} x ${key}`);
  console.log(`${lines.length} recorded exchanges checked against the document's schemas`);
  if (lines.length < 10) fail(`only ${lines.length} exchanges were recorded in ${args.bodies}`);
}
if (failures > 0) { console.error(`${failures} failure(s)`); process.exit(1); }
console.log('ok');
