/* global module */
/**
 * The import rule of src/ (docs/architecture.md): layers import only downwards, nothing imports in a
 * cycle, domain code never touches Slack, and the simulator stays apart. `npm test` runs it
 * (`npm run lint:deps`); test/architecture/layers.test.ts shows it failing on an upward import.
 *
 * Ranks, lowest first. A file may import its own rank or any lower one; siblings of one rank may
 * import each other as long as no cycle forms.
 */
const LAYERS = [
  // 0: the vocabulary every layer shares.
  ['core', ['^src/core/', '^src/log\\.ts$']],
  // 1: configuration and the clients of what rollcall talks to; Redis and BullMQ plumbing.
  ['infra', ['^src/config/', '^src/argocd/', '^src/kube/', '^src/dev/', '^src/jobs/(redis|queues|rate-limit)\\.ts$']],
  // 2: the mirror of the fleet and its rules.
  ['fleet', ['^src/fleet/']],
  // 3: the audit stream, which every domain service below commands writes and reads.
  ['audit', ['^src/audit/']],
  // 4: domain services.
  ['domain', ['^src/runbooks/', '^src/incidents/', '^src/alerts/']],
  // 5: the chat grammar over them.
  ['commands', ['^src/commands/']],
  // 6: Reply -> Block Kit / text.
  ['views', ['^src/views/']],
  // 7: surfaces and processes.
  ['surfaces', ['^src/slack/', '^src/cli/', '^src/http/', '^src/jobs/', '^src/main\\.ts$']],
];

const anyOf = (patterns) => `(${patterns.join('|')})`;

// jobs/redis.ts, queues.ts and rate-limit.ts are plumbing (rank 1) inside the top-rank jobs/ folder: the
// infra rule checks what they import, and no rule counts them as a higher rank when imported.
const JOBS_PLUMBING = '^src/jobs/(redis|queues|rate-limit)\\.ts$';

const upward = LAYERS.slice(0, -1).map(([name, from], i) => ({
  name: `no-upward-from-${name}`,
  comment: `${name} may import ${LAYERS.slice(0, i + 1)
    .map(([n]) => n)
    .join(', ')}; not ${LAYERS.slice(i + 1)
    .map(([n]) => n)
    .join(', ')}.`,
  severity: 'error',
  from: { path: anyOf(from) },
  to: { path: anyOf(LAYERS.slice(i + 1).flatMap(([, paths]) => paths)), pathNot: JOBS_PLUMBING },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-circular',
      comment:
        'A cycle makes two modules one; split the shared part out downwards. `import type` is erased when compiled, so a ' +
        'cycle closed only by type imports is allowed (the layer rules above still apply to type imports).',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'domain-without-slack',
      comment: 'commands, fleet and the domain services are transport-neutral: no @slack/*, no Block Kit (views/ renders).',
      severity: 'error',
      from: { path: '^src/(commands|fleet|audit|runbooks|incidents|alerts|core)/' },
      to: { path: ['^node_modules/@slack/', '^@slack/', '^src/views/', '^src/slack/'] },
    },
    {
      name: 'commands-see-runbooks-index',
      comment: 'Commands reach the runbooks layer through src/runbooks/index.ts only: the engine and actions behind it may move.',
      severity: 'error',
      from: { path: '^src/commands/' },
      to: { path: '^src/runbooks/', pathNot: '^src/runbooks/index\\.ts$' },
    },
    {
      name: 'only-cli-imports-sim',
      comment: 'The simulator is a tool: only the CLI (and tests) start it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(cli|sim)/' },
      to: { path: '^src/sim/' },
    },
    {
      name: 'sim-shares-types-and-rollingsync',
      comment: 'The simulator shares only Argo CD types, object facts and label selectors, and the pure RollingSync semantics.',
      severity: 'error',
      from: { path: '^src/sim/' },
      to: { path: '^src/', pathNot: ['^src/sim/', '^src/argocd/(types|objects|labels)\\.ts$', '^src/fleet/rollingsync\\.ts$'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
