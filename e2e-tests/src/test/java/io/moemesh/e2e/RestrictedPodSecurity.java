package io.moemesh.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The "restricted" Pod Security Standard (kubernetes.io/docs/concepts/security/pod-security-standards), as the
 * admission controller applies it to a pod template: what a namespace labelled
 * {@code pod-security.kubernetes.io/enforce: restricted} would reject, one message per violation.
 */
final class RestrictedPodSecurity {
  private static final Set<String> VOLUME_TYPES =
      Set.of("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret");
  private static final Set<String> SECCOMP_TYPES = Set.of("RuntimeDefault", "Localhost");

  private RestrictedPodSecurity() {}

  /** Violations of the pod spec {@code pod} (a workload's {@code spec.template.spec}); empty when it passes. */
  static List<String> violations(JsonNode pod) {
    List<String> out = new ArrayList<>();
    for (String host : List.of("hostNetwork", "hostPID", "hostIPC"))
      if (pod.path(host).asBoolean(false)) out.add(host + " is true");
    for (JsonNode v : pod.path("volumes"))
      for (var field : v.properties())
        if (!field.getKey().equals("name") && !VOLUME_TYPES.contains(field.getKey()) && !field.getValue().isNull())
          out.add("volume " + v.path("name").asText() + " is of type " + field.getKey());
    JsonNode podContext = pod.path("securityContext");
    if (podContext.path("runAsUser").asInt(-1) == 0) out.add("the pod runs as user 0");
    for (String list : List.of("initContainers", "containers", "ephemeralContainers"))
      for (JsonNode c : pod.path(list)) container(c, podContext, list + "/" + c.path("name").asText(), out);
    return out;
  }

  private static void container(JsonNode c, JsonNode podContext, String where, List<String> out) {
    JsonNode sc = c.path("securityContext");
    if (sc.path("privileged").asBoolean(false)) out.add(where + ": privileged");
    if (!sc.path("allowPrivilegeEscalation").isBoolean() || sc.path("allowPrivilegeEscalation").asBoolean())
      out.add(where + ": allowPrivilegeEscalation must be false");
    boolean dropsAll = false;
    for (JsonNode d : sc.path("capabilities").path("drop")) dropsAll |= d.asText().equals("ALL");
    if (!dropsAll) out.add(where + ": capabilities must drop ALL");
    for (JsonNode a : sc.path("capabilities").path("add"))
      if (!a.asText().equals("NET_BIND_SERVICE")) out.add(where + ": adds capability " + a.asText());
    boolean nonRoot = sc.has("runAsNonRoot") ? sc.path("runAsNonRoot").asBoolean() : podContext.path("runAsNonRoot").asBoolean(false);
    if (!nonRoot) out.add(where + ": runAsNonRoot must be true");
    if (sc.path("runAsUser").asInt(-1) == 0) out.add(where + ": runs as user 0");
    String seccomp = sc.path("seccompProfile").path("type").asText(podContext.path("seccompProfile").path("type").asText(""));
    if (!SECCOMP_TYPES.contains(seccomp)) out.add(where + ": seccompProfile must be RuntimeDefault or Localhost");
    for (JsonNode p : c.path("ports")) if (p.path("hostPort").asInt(0) != 0) out.add(where + ": hostPort " + p.path("hostPort").asInt());
  }
}
