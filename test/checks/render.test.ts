import { describe, expect, it } from 'vitest';
import {
  CheckRenderError,
  promqlString,
  renderCheckQuery,
  subjectOf,
  type CheckSubject,
} from '../../src/domain/checks/index.js';
import { placeholderProblems, placeholderUses } from '../../src/infra/config/check-query.js';
import { ConfigError, parseConfig } from '../../src/infra/config/load.js';
import { app } from '../commands/fixtures.js';

const subject: CheckSubject = {
  app: 'checkout-prod-eu1',
  cluster: 'prod-eu1',
  namespace: 'checkout',
  instance: 'east',
  project: 'payments',
  labels: { team: 'pay', 'app.kubernetes.io/name': 'checkout' },
};

const render = (query: string, s: CheckSubject = subject, windowMs = 60_000) =>
  renderCheckQuery('error-rate', query, s, windowMs);

/** The CheckRenderError a render fails with. */
function renderError(query: string, s: CheckSubject = subject): CheckRenderError {
  try {
    render(query, s);
  } catch (error) {
    expect(error).toBeInstanceOf(CheckRenderError);
    return error as CheckRenderError;
  }
  throw new Error(`rendered ${query} without an error`);
}

describe('renderCheckQuery', () => {
  it('puts the app identity, its labels and the window into the query', () => {
    expect(
      render(
        'sum(rate(http_errors_total{app="{{app}}",cluster="{{ cluster }}",namespace="{{namespace}}",argocd="{{instance}}",project="{{project}}",team="{{labels.team}}",name="{{labels.app.kubernetes.io/name}}"}[{{window}}]))',
      ),
    ).toBe(
      'sum(rate(http_errors_total{app="checkout-prod-eu1",cluster="prod-eu1",namespace="checkout",argocd="east",project="payments",team="pay",name="checkout"}[1m]))',
    );
  });

  it('writes the window as a Prometheus duration: whole units, compound where needed', () => {
    expect(render('x[{{window}}]', subject, 30_000)).toBe('x[30s]');
    expect(render('x[{{window}}]', subject, 90_000)).toBe('x[1m30s]');
    expect(render('x[{{window}}]', subject, 2 * 3_600_000)).toBe('x[2h]');
  });

  it('escapes a hostile label so it stays one string value: quote, backslash and line break cannot end it', () => {
    const hostile = { ...subject, labels: { team: 'a"} or vector(1) #\\\nx' } };
    expect(render('errors{team="{{labels.team}}"}', hostile)).toBe('errors{team="a\\"} or vector(1) #\\\\\\nx"}');
    expect(promqlString('tab\tcr\r')).toBe('tab\\tcr\\r');
  });

  it('replaces in one pass: a value that looks like a placeholder stays text', () => {
    const sneaky = { ...subject, app: '{{labels.secret}}' };
    expect(render('x{app="{{app}}"}', sneaky)).toBe('x{app="{{labels.secret}}"}');
  });

  it('names the check and the label an app lacks', () => {
    const error = renderError('x{owner="{{labels.owner}}"}');
    expect(error.code).toBe('check_placeholder');
    expect(error.message).toBe(
      'Check error-rate: app checkout-prod-eu1 (east/prod-eu1) has no label `owner` for {{labels.owner}}.',
    );
  });

  it('names the check and the field an app lacks (no destination namespace)', () => {
    const error = renderError('x{ns="{{namespace}}"}', { ...subject, namespace: undefined });
    expect(error.message).toBe(
      'Check error-rate: app checkout-prod-eu1 (east/prod-eu1) has no destination namespace for {{namespace}}.',
    );
  });

  it('refuses an unknown placeholder, naming the check and the one meant', () => {
    const error = renderError('x{app="{{aap}}"}');
    expect(error.message).toMatch(/^Check error-rate: unknown placeholder \{\{aap\}\} \(did you mean \{\{app\}\}\?\)/);
  });

  it('reads the subject from a FleetApp: name, cluster, destination namespace, project and labels', () => {
    const fa = {
      instance: 'east',
      cluster: 'prod-us1',
      app: app({ name: 'web-prod-us1', clusterName: 'prod-us1', labels: { env: 'prod' }, project: 'web' }),
    };
    expect(subjectOf(fa)).toEqual({
      app: 'web-prod-us1',
      cluster: 'prod-us1',
      namespace: 'web-prod-us1',
      instance: 'east',
      project: 'web',
      labels: { env: 'prod' },
    });
  });
});

describe('placeholders at config time', () => {
  it('finds placeholders with whether they stand in a double-quoted string', () => {
    expect(
      placeholderUses(`a{x="{{app}}"}[{{window}}] # {{cluster}}\n+ b{y='{{project}}'} + c{z=\`{{instance}}\`}`).map(
        (u) => [u.text, u.quoted],
      ),
    ).toEqual([
      ['app', true],
      ['window', false],
      ['cluster', false],
      ['project', false],
      ['instance', false],
    ]);
  });

  it('refuses identity placeholders outside a double-quoted string, where escaping would not hold', () => {
    expect(placeholderProblems("x{a='{{app}}'}")).toEqual([
      '{{app}} must stand inside a double-quoted string (e.g. app="{{app}}"): rollcall escapes the value for one',
    ]);
    expect(placeholderProblems('x{a="{{app}}"}[{{window}}]')).toEqual([]);
    // An escaped quote does not end the string.
    expect(placeholderProblems('x{a="pre\\"{{app}}"}')).toEqual([]);
  });

  it('refuses a {{ that is never closed', () => {
    expect(placeholderProblems('x{a="{{app"}')).toEqual(['a {{ at character 6 is never closed with }}']);
  });

  it('makes an unknown placeholder a config error naming the check, its line and the known ones', () => {
    const yaml = [
      'instances:',
      '  - { name: east, url: "http://argocd.example", token: t }',
      'prometheus:',
      '  url: http://prometheus.example:9090',
      'checks:',
      '  error-rate:',
      '    query: \'sum(rate(errors{app="{{app}}",team="{{labels.team}}"}[{{windw}}]))\'',
      '    failAbove: 0.05',
      '',
    ].join('\n');
    let error: unknown;
    try {
      parseConfig(yaml, 'rollcall.yaml', {});
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      {
        path: 'checks.error-rate.query',
        message:
          'unknown placeholder {{windw}} (did you mean {{window}}?); known: {{app}}, {{cluster}}, {{namespace}}, {{instance}}, {{project}}, {{window}}, {{labels.KEY}}',
        line: 7,
      },
    ]);
  });
});
