/** Metric checks: a PromQL query per app, judged against a threshold (config `prometheus` and `checks`). */
export {
  CheckService,
  type CheckServiceOptions,
  type ChecksConfig,
  type EvaluateOptions,
  type PrometheusTarget,
} from './evaluate.js';
export {
  CheckRenderError,
  promqlDuration,
  promqlString,
  renderCheckQuery,
  subjectOf,
  type CheckSubject,
} from './render.js';
export {
  formatValue,
  graphLink,
  judge,
  rangeStepS,
  thresholdOf,
  type CheckVerdict,
  type Observation,
} from './verdict.js';
