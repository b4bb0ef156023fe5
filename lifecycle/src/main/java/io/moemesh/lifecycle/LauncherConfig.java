package io.moemesh.lifecycle;

import io.smallrye.config.ConfigMapping;
import java.util.OptionalLong;

/** Who launched this service ({@code moemesh.launcher.*}; docs/configuration.md, "Every service"). */
@ConfigMapping(prefix = "moemesh.launcher")
public interface LauncherConfig {
  /** The environment variable a launcher sets to its own pid in the services it starts (as SmallRye maps {@link #pid()}). */
  String PID_VARIABLE = "MOEMESH_LAUNCHER_PID";

  /**
   * The pid of the process that launched this one ({@code MOEMESH_LAUNCHER_PID}, which {@code bin/moemesh up} and the
   * planner's local connector set): when it is gone, even killed with {@code kill -9}, this service stops as on SIGTERM.
   * Unset (Kubernetes, {@code up --detach}): the service runs until it is stopped.
   */
  OptionalLong pid();
}
