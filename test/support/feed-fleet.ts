import type { FleetEvent } from '../../src/fleet/events.js';
import { FleetIndex, type StaticFleet } from '../../src/fleet/model.js';

/** A fixture fleet whose feed the test drives, as the live mirror's watch events would. */
export class FeedFleet extends FleetIndex {
  static of(source: StaticFleet): FeedFleet {
    const fleet = new FeedFleet(source.instances());
    fleet.load([...source.apps()], [...source.appSets()], [...source.clusters()]);
    return fleet;
  }

  publish(event: FleetEvent): void {
    this.feed.publish(event);
  }
}
