package io.moemesh.engine;

import java.io.ByteArrayOutputStream;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;

/**
 * A KV store in a map, for disaggregation tests: a prefill engine saves into it, a decode engine loads from it
 * on another thread. Loads of ids in {@link #lost} fail; loads of ids in {@link #held} wait for {@link #release}; a
 * request in {@link #prefixSource} loads the first positions of that other request's object (a stored prefix).
 */
final class InMemoryKvConnector implements KvConnector, AutoCloseable {
  final Map<String, Map<Integer, TreeMap<Integer, byte[]>>> objects = new ConcurrentHashMap<>();
  final java.util.Set<String> lost = ConcurrentHashMap.newKeySet();
  final java.util.Set<String> held = ConcurrentHashMap.newKeySet();
  final Map<String, String> prefixSource = new ConcurrentHashMap<>();
  private final Map<String, Runnable> parked = new ConcurrentHashMap<>();
  private final ExecutorService loader = Executors.newSingleThreadExecutor();

  @Override
  public void saveLayer(String requestId, int layerId, int startPosition, byte[] rows) {
    objects.computeIfAbsent(requestId, k -> new ConcurrentHashMap<>()).computeIfAbsent(layerId, k -> new TreeMap<>()).put(startPosition, rows);
  }

  @Override
  public void load(String requestId, int numTokens, KvSink sink, Consumer<KvLoadResult> done) {
    Runnable work = () -> {
      if (lost.contains(requestId)) {
        done.accept(KvLoadResult.failed(KvLoadResult.Reason.NOT_FOUND, "object " + requestId + " is gone"));
        return;
      }
      try {
        var layers = objects.get(prefixSource.getOrDefault(requestId, requestId));
        for (var layer : layers.keySet()) {
          if (layer >= sink.numLayers()) continue; // an MTP layer the request does not import, as StoreLoad skips it
          byte[] rows = rows(layers, layer);
          sink.writeLayer(layer, 0, java.util.Arrays.copyOf(rows, numTokens * sink.latentDim() * sink.dtype().byteSize()));
        }
        done.accept(KvLoadResult.LOADED);
      } catch (RuntimeException e) {
        done.accept(KvLoadResult.failed(KvLoadResult.Reason.INVALID_OBJECT, e.toString()));
      }
    };
    if (held.contains(requestId)) parked.put(requestId, work);
    else loader.execute(work);
  }

  /** A layer of a saved object: its chunks in position order, from 0. */
  static byte[] rows(Map<Integer, TreeMap<Integer, byte[]>> layers, int layer) {
    var bytes = new ByteArrayOutputStream();
    layers.get(layer).values().forEach(bytes::writeBytes);
    return bytes.toByteArray();
  }

  void release(String requestId) {
    loader.execute(parked.remove(requestId));
  }

  @Override
  public void close() {
    loader.shutdownNow();
  }
}
