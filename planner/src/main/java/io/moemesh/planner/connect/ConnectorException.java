package io.moemesh.planner.connect;

import io.moemesh.planner.Stage;

/** A connector could not read or set a stage's replicas. */
public final class ConnectorException extends RuntimeException {
  public ConnectorException(Stage stage, String what, Throwable cause) {
    super(stage.label() + ": " + what + ": " + cause.getMessage(), cause);
  }

  public ConnectorException(Stage stage, String what) {
    super(stage.label() + ": " + what);
  }
}
