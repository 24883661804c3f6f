#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx, so `npm ci` is the only install step.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
