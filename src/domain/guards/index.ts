export { GuardStore, guardKey, type Guard, type GuardTrip, type TripApp } from './store.js';
export { GuardWatcher, guardedRollout, type GuardedRollout, type GuardWatcherOptions } from './watcher.js';
export { tripReply } from './replies.js';
