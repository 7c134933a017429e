// node --test web/report-check.test.mjs: the browser run fails on zero or fewer-than-planned cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shortfall } from './report-check.mjs';

const row = (format, cases, planned) => ({ format, op: 'dequant', variant: 'workgroup', cases, planned });
const result = (format) => ({ format, op: 'dequant', variant: 'workgroup', verdict: 'pass' });

test('a complete run has no shortfall', () => {
  const report = { planned: 3, results: [result('bf16'), result('bf16'), result('fp32')], summary: [row('bf16', 2, 2), row('fp32', 1, 1)] };
  assert.deepEqual(shortfall(report), []);
});

test('a run of zero cases fails', () => {
  assert.ok(shortfall({ planned: 0, results: [], summary: [] }).length > 0);
  assert.ok(shortfall({ results: [], summary: [] }).length > 0, 'a report without a plan');
});

test('a dropped case fails, naming its row', () => {
  const report = { planned: 3, results: [result('bf16'), result('fp32')], summary: [row('bf16', 1, 2), row('fp32', 1, 1)] };
  assert.deepEqual(shortfall(report), ['2 of 3 planned cases ran', 'bf16 dequant workgroup: 1 of 2 planned cases ran']);
});

test('a planned row that never ran fails', () => {
  const report = { planned: 2, results: [result('bf16')], summary: [row('bf16', 1, 1), row('fp32', 0, 1)] };
  assert.ok(shortfall(report).includes('fp32 dequant workgroup: 0 of 1 planned cases ran'));
});
