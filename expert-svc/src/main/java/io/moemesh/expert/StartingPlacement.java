package io.moemesh.expert;

import io.moemesh.model.moe.Placement;
import io.moemesh.proto.expert.v1.ExpertServiceInfo;
import io.moemesh.proto.expert.v1.PlacementTable;
import java.time.Duration;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * The placement a routed shard loads at startup. A shard that restarts into a running mesh resumes the newest
 * placement its peers have prepared (Info's {@code prepared_placement}), same version and slots, so the frames the
 * attention replicas send it right away find their experts; when no peer answers (the whole mesh is starting) or
 * none holds a placement of this mesh's shape, it is the starting placement.
 */
final class StartingPlacement {
  private static final Logger LOG = Logger.getLogger(StartingPlacement.class);

  private StartingPlacement() {}

  /**
   * @param peers every routed shard's gRPC address in shard order (this one's included, and skipped), or none
   * @param timeout how long each peer may take to answer Info
   */
  static Placement choose(Placement initial, int shard, List<String> peers, Duration timeout) {
    PlacementTable newest = null;
    String from = null;
    for (int s = 0; s < peers.size(); s++) {
      if (s == shard) continue;
      try (var client = new GrpcShardClient(s, peers.get(s).trim(), timeout.multipliedBy(10))) {
        ExpertServiceInfo info = client.info();
        if (info.hasPreparedPlacement() && (newest == null || info.getPreparedPlacement().getVersion() > newest.getVersion())) {
          newest = info.getPreparedPlacement();
          from = client.name();
        }
      } catch (RuntimeException e) {
        LOG.debugf("no placement from shard %d at startup: %s", s, e.getMessage());
      }
    }
    Placement resumed = PlacementCoordinator.resumable(newest, initial);
    if (resumed == null) return initial;
    LOG.infof("resuming placement version %d from %s", resumed.version(), from);
    return resumed;
  }
}
