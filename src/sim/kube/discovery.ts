/**
 * What kubectl needs besides the objects themselves: the discovery documents client-go reads
 * before any request (/version, /api, /apis, and each group-version's resource list), and the
 * server-side Table that `kubectl get` asks for (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`)
 * with the columns the real API server prints for each kind.
 */

type Obj = Record<string, any>;

export interface SimResource {
  /** Plural, as in the URL. */
  name: string;
  singularName: string;
  kind: string;
  namespaced: boolean;
  group: string;
  version: string;
  verbs: string[];
  shortNames?: string[];
}

const READ = ['get', 'list'];
export const SIM_RESOURCES: SimResource[] = [
  {
    name: 'namespaces',
    singularName: 'namespace',
    kind: 'Namespace',
    namespaced: false,
    group: '',
    version: 'v1',
    verbs: ['create', ...READ],
    shortNames: ['ns'],
  },
  {
    name: 'secrets',
    singularName: 'secret',
    kind: 'Secret',
    namespaced: true,
    group: '',
    version: 'v1',
    verbs: ['create', 'delete', ...READ],
  },
  {
    name: 'pods',
    singularName: 'pod',
    kind: 'Pod',
    namespaced: true,
    group: '',
    version: 'v1',
    verbs: ['delete', ...READ],
    shortNames: ['po'],
  },
  {
    name: 'events',
    singularName: 'event',
    kind: 'Event',
    namespaced: true,
    group: '',
    version: 'v1',
    verbs: READ,
    shortNames: ['ev'],
  },
  {
    name: 'deployments',
    singularName: 'deployment',
    kind: 'Deployment',
    namespaced: true,
    group: 'apps',
    version: 'v1',
    verbs: ['patch', ...READ],
    shortNames: ['deploy'],
  },
  {
    name: 'replicasets',
    singularName: 'replicaset',
    kind: 'ReplicaSet',
    namespaced: true,
    group: 'apps',
    version: 'v1',
    verbs: READ,
    shortNames: ['rs'],
  },
  {
    name: 'rollouts',
    singularName: 'rollout',
    kind: 'Rollout',
    namespaced: true,
    group: 'argoproj.io',
    version: 'v1alpha1',
    verbs: ['patch', ...READ],
    shortNames: ['ro'],
  },
  {
    name: 'sealedsecrets',
    singularName: 'sealedsecret',
    kind: 'SealedSecret',
    namespaced: true,
    group: 'bitnami.com',
    version: 'v1alpha1',
    verbs: READ,
  },
];

export const KUBE_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.4',
  gitCommit: '59526cd4867447956156ae3a602fcbac10a2c335',
  gitTreeState: 'clean',
  buildDate: '2025-04-22T16:02:27Z',
  goVersion: 'go1.23.6',
  compiler: 'gc',
  platform: 'linux/amd64',
};

/** The discovery document at `path`, or undefined when the path is not a discovery path. */
export function discovery(path: string): unknown {
  if (path === '/version' || path === '/version/') return KUBE_VERSION;
  if (path === '/api' || path === '/api/')
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:6443' }],
    };
  if (path === '/apis' || path === '/apis/') {
    const groups = [...new Set(SIM_RESOURCES.filter((r) => r.group).map((r) => `${r.group}/${r.version}`))].map(
      (gv) => {
        const [group, version] = gv.split('/');
        const v = { groupVersion: gv, version };
        return { name: group, versions: [v], preferredVersion: v };
      },
    );
    return { kind: 'APIGroupList', apiVersion: 'v1', groups };
  }
  const m = /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))\/?$/.exec(path);
  if (!m) return undefined;
  const group = m[1] ? '' : m[2];
  const version = m[1] ?? m[3];
  const resources = SIM_RESOURCES.filter((r) => r.group === group && r.version === version);
  if (!resources.length) return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources: resources.map((r) => ({
      name: r.name,
      singularName: r.singularName,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs,
      ...(r.shortNames ? { shortNames: r.shortNames } : {}),
    })),
  };
}

/** Whether the client asked for a server-side Table (kubectl get does). */
export function wantsTable(accept: string | undefined): boolean {
  return !!accept && /as=Table/.test(accept) && /g=meta\.k8s\.io/.test(accept);
}

/** k8s.io/apimachinery duration.HumanDuration, as the Age column prints it. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 192) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  const y = Math.floor(d / 365);
  return d % 365 === 0 ? `${y}y` : `${y}y${d % 365}d`;
}

interface Column {
  name: string;
  type: string;
  format?: string;
  description: string;
  priority?: number;
  cell: (o: Obj, now: Date) => unknown;
}

const age = (o: Obj, now: Date) =>
  o.metadata?.creationTimestamp ? humanDuration(now.getTime() - Date.parse(o.metadata.creationTimestamp)) : '<unknown>';
const NAME: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  cell: (o) => o.metadata.name,
};
const AGE: Column = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  cell: age,
};

function podReady(o: Obj): string {
  const total = o.spec?.containers?.length ?? 1;
  const ready = o.status?.conditions?.some((c: Obj) => c.type === 'Ready' && c.status === 'True') ? total : 0;
  return `${ready}/${total}`;
}

/** The columns the API server prints for each kind (pkg/printers/internalversion; the CRDs' additionalPrinterColumns). */
const COLUMNS: Record<string, Column[]> = {
  Secret: [
    NAME,
    { name: 'Type', type: 'string', description: 'The type of the secret', cell: (o) => o.type ?? 'Opaque' },
    {
      name: 'Data',
      type: 'string',
      description: 'The number of entries in the secret',
      cell: (o) => Object.keys(o.data ?? {}).length,
    },
    AGE,
  ],
  Pod: [
    NAME,
    {
      name: 'Ready',
      type: 'string',
      description: 'The aggregate readiness state of this pod for accepting traffic.',
      cell: podReady,
    },
    {
      name: 'Status',
      type: 'string',
      description: 'The aggregate status of the containers in this pod.',
      cell: (o) => o.status?.phase ?? 'Pending',
    },
    {
      name: 'Restarts',
      type: 'string',
      description: 'The number of times the containers in this pod have been restarted.',
      cell: () => '0',
    },
    AGE,
  ],
  Namespace: [
    NAME,
    {
      name: 'Status',
      type: 'string',
      description: 'The status of the namespace',
      cell: (o) => o.status?.phase ?? 'Active',
    },
    AGE,
  ],
  Deployment: [
    NAME,
    {
      name: 'Ready',
      type: 'string',
      description: 'Number of the pod with ready state',
      cell: (o) => `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 1}`,
    },
    {
      name: 'Up-to-date',
      type: 'string',
      description:
        'Total number of non-terminated pods targeted by this deployment that have the desired template spec.',
      cell: (o) => o.status?.updatedReplicas ?? 0,
    },
    {
      name: 'Available',
      type: 'string',
      description: 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.',
      cell: (o) => o.status?.availableReplicas ?? 0,
    },
    AGE,
  ],
  ReplicaSet: [
    NAME,
    {
      name: 'Desired',
      type: 'integer',
      description: 'Number of desired pods.',
      cell: (o) => o.spec?.replicas ?? 1,
    },
    {
      name: 'Current',
      type: 'integer',
      description: 'Number of pods currently running.',
      cell: (o) => o.status?.replicas ?? 0,
    },
    {
      name: 'Ready',
      type: 'integer',
      description: 'Number of pods ready.',
      cell: (o) => o.status?.readyReplicas ?? 0,
    },
    AGE,
  ],
  // The Rollout CRD's additionalPrinterColumns (argo-rollouts manifests/crds/rollout-crd.yaml).
  Rollout: [
    NAME,
    { name: 'Desired', type: 'integer', description: 'Number of desired pods', cell: (o) => o.spec?.replicas ?? null },
    {
      name: 'Current',
      type: 'integer',
      description: 'Total number of non-terminated pods targeted by this rollout',
      cell: (o) => o.status?.replicas ?? null,
    },
    {
      name: 'Up-to-date',
      type: 'integer',
      description: 'Total number of non-terminated pods targeted by this rollout that have the desired template spec',
      cell: (o) => o.status?.updatedReplicas ?? null,
    },
    {
      name: 'Available',
      type: 'integer',
      description: 'Total number of available pods (ready for at least minReadySeconds) targeted by this rollout',
      cell: (o) => o.status?.availableReplicas ?? null,
    },
    AGE,
  ],
  SealedSecret: [
    NAME,
    { name: 'Status', type: 'string', description: '', cell: (o) => o.status?.conditions?.[0]?.message ?? null },
    { name: 'Synced', type: 'string', description: '', cell: (o) => o.status?.conditions?.[0]?.status ?? null },
    AGE,
  ],
  Event: [
    {
      name: 'Last Seen',
      type: 'string',
      description: 'Time when last event occurred',
      cell: (o, now) => (o.lastTimestamp ? humanDuration(now.getTime() - Date.parse(o.lastTimestamp)) : '<unknown>'),
    },
    { name: 'Type', type: 'string', description: 'Type of this event.', cell: (o) => o.type },
    { name: 'Reason', type: 'string', description: 'Short, machine understandable string.', cell: (o) => o.reason },
    {
      name: 'Object',
      type: 'string',
      description: 'The object this Event is about.',
      cell: (o) => `${String(o.involvedObject?.kind ?? '').toLowerCase()}/${o.involvedObject?.name ?? ''}`,
    },
    {
      name: 'Message',
      type: 'string',
      description: 'A human-readable description of the status of this operation.',
      cell: (o) => o.message,
    },
  ],
};

/** A meta.k8s.io/v1 Table of `items` (a list) or of one object; `includeObject` as the query asked. */
export function asTable(
  kind: string,
  items: Obj[],
  resourceVersion: string,
  now: Date,
  includeObject: string | null,
): Obj {
  const columns = COLUMNS[kind] ?? [NAME, AGE];
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description,
      priority: c.priority ?? 0,
    })),
    rows: items.map((o) => ({
      cells: columns.map((c) => c.cell(o, now)),
      object:
        includeObject === 'None'
          ? undefined
          : includeObject === 'Object'
            ? o
            : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  };
}
