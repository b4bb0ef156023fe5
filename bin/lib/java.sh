# shellcheck shell=bash
# Finds a JDK >= 25 for MoE Mesh. Sourced by bin/moemesh and .ci/run: the one place this rule lives.
#
#   moemesh_use_java    exports JAVA_HOME (and puts its bin first on PATH), or fails with a clear message.
#
# Order: $JAVA_HOME if it is >= 25; else the `java` on PATH if it is >= 25; else the Temurin 25 JDK these
# machines ship at /usr/lib/jvm/temurin-25-jdk-amd64.

MOEMESH_MIN_JAVA=25
MOEMESH_DEFAULT_JDK=/usr/lib/jvm/temurin-25-jdk-amd64
# Flags every JVM of ours needs: FFM downcalls into the native kernels (as moemesh.jvm.args in pom.xml).
MOEMESH_JVM_ARGS=(--enable-native-access=ALL-UNNAMED)

# Prints the feature release (8, 17, 25, ...) of the JDK at $1, or nothing when it has no runnable java.
moemesh_java_major() {
  local out
  [[ -x "$1/bin/java" ]] || return 0
  out=$("$1/bin/java" -version 2>&1 | head -n 1) || return 0
  # 'openjdk version "25.0.3" 2025-..' or 'java version "1.8.0_402"'
  if [[ $out =~ \"1\.([0-9]+) ]]; then echo "${BASH_REMATCH[1]}"
  elif [[ $out =~ \"([0-9]+) ]]; then echo "${BASH_REMATCH[1]}"
  fi
}

moemesh_use_java() {
  local candidate candidates=() major
  [[ -n ${JAVA_HOME:-} ]] && candidates+=("$JAVA_HOME")
  if command -v java >/dev/null 2>&1; then
    candidate=$(readlink -f "$(command -v java)")
    candidates+=("${candidate%/bin/java}")
  fi
  candidates+=("$MOEMESH_DEFAULT_JDK")
  for candidate in "${candidates[@]}"; do
    major=$(moemesh_java_major "$candidate")
    if [[ -n $major ]] && (( major >= MOEMESH_MIN_JAVA )); then
      if [[ -n ${JAVA_HOME:-} && $JAVA_HOME != "$candidate" ]]; then
        echo "note: JAVA_HOME=$JAVA_HOME is not a JDK >= $MOEMESH_MIN_JAVA; using $candidate" >&2
      fi
      export JAVA_HOME=$candidate
      export PATH="$JAVA_HOME/bin:$PATH"
      return 0
    fi
  done
  echo "error: MoE Mesh needs JDK $MOEMESH_MIN_JAVA or newer. Looked at: ${candidates[*]}" >&2
  echo "       Install one (e.g. Temurin 25) and set JAVA_HOME to it." >&2
  return 1
}
