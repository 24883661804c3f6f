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
  ['core', ['^src/core/']],
  // 1: plumbing (logging, metrics, Redis, queues, rate limits), configuration, and the clients of Argo CD, Prometheus and Kubernetes.
  ['infra', ['^src/infra/']],
  // 2: the mirror of the fleet and its rules.
  ['fleet', ['^src/fleet/']],
  // 3: domain services: the audit stream first (the others write it), then runbooks, incidents, alerts and metric checks.
  ['domain', ['^src/domain/']],
  // 4: the chat grammar over them.
  ['commands', ['^src/commands/']],
  // 5: Reply -> Block Kit / text.
  ['views', ['^src/views/']],
  // 6: surfaces and processes.
  ['surfaces', ['^src/surfaces/', '^src/main\\.ts$']],
];

const anyOf = (patterns) => `(${patterns.join('|')})`;

const upward = LAYERS.slice(0, -1).map(([name, from], i) => ({
  name: `no-upward-from-${name}`,
  comment: `${name} may import ${LAYERS.slice(0, i + 1)
    .map(([n]) => n)
    .join(', ')}; not ${LAYERS.slice(i + 1)
    .map(([n]) => n)
    .join(', ')}.`,
  severity: 'error',
  from: { path: anyOf(from) },
  to: { path: anyOf(LAYERS.slice(i + 1).flatMap(([, paths]) => paths)) },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-circular',
      comment:
        'A cycle makes two modules one; split the shared part out downwards. Type imports count: a cycle of types is ' +
        'still two modules that cannot be read apart.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'audit-below-the-domain',
      comment: 'The audit stream is written by every domain service: it imports none of them.',
      severity: 'error',
      from: { path: '^src/domain/audit/' },
      to: { path: '^src/domain/(runbooks|incidents|alerts)/' },
    },
    {
      name: 'domain-without-slack',
      comment:
        'commands, fleet and the domain services are transport-neutral: no @slack/*, no Block Kit (views/ renders).',
      severity: 'error',
      from: { path: '^src/(commands|fleet|domain|infra|core)/' },
      to: { path: ['^node_modules/@slack/', '^@slack/', '^src/views/', '^src/surfaces/'] },
    },
    {
      name: 'commands-see-runbooks-index',
      comment:
        'Commands reach the runbooks through src/domain/runbooks/index.ts only: the engine and actions behind it may move.',
      severity: 'error',
      from: { path: '^src/commands/' },
      to: { path: '^src/domain/runbooks/', pathNot: '^src/domain/runbooks/index\\.ts$' },
    },
    {
      name: 'only-cli-imports-sim',
      comment: 'The simulator is a tool: only the CLI (and tests) start it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(surfaces/cli|sim)/' },
      to: { path: '^src/sim/' },
    },
    {
      name: 'sim-shares-types-and-rollingsync',
      comment:
        'The simulator shares only Argo CD types, object facts, label selectors and sync windows, and the pure RollingSync and Argo Rollouts semantics.',
      severity: 'error',
      from: { path: '^src/sim/' },
      to: {
        path: '^src/',
        pathNot: [
          '^src/sim/',
          '^src/infra/argocd/(types|objects|labels|sync-windows)\\.ts$',
          '^src/fleet/(rollingsync|argo-rollouts)\\.ts$',
        ],
      },
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
