package io.moemesh.kvstore;

import com.google.protobuf.ByteString;
import io.moemesh.proto.common.v1.DType;
import io.moemesh.proto.common.v1.Tensor;
import io.moemesh.proto.kvstore.v1.KvLayout;
import io.moemesh.proto.kvstore.v1.LayerRows;
import io.moemesh.proto.kvstore.v1.PutEnd;
import io.moemesh.proto.kvstore.v1.PutFrame;
import io.moemesh.proto.kvstore.v1.PutStart;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Builds put streams the way the prefill sends them: per chunk of tokens, each layer as it is computed. */
final class KvWire {
  static final int LATENT_DIM = 576; // DeepSeek-V3: kv_lora_rank 512 + qk_rope_head_dim 64
  static final int ROW_BYTES = LATENT_DIM * 2; // BF16

  private KvWire() {}

  static KvLayout layout(int numLayers, int numTokens) {
    return KvLayout.newBuilder().setNumLayers(numLayers).setNumTokens(numTokens).setLatentDim(LATENT_DIM)
        .setDtype(DType.DTYPE_BF16).setPageSize(16).build();
  }

  /** Random BF16 bytes, (numTokens, latentDim) per layer. */
  static byte[][] randomLayers(KvLayout layout, long seed) {
    Random random = new Random(seed);
    byte[][] layers = new byte[layout.getNumLayers()][layout.getNumTokens() * ROW_BYTES];
    for (byte[] layer : layers) random.nextBytes(layer);
    return layers;
  }

  static PutFrame start(String key, KvLayout layout, long... pageHashes) {
    PutStart.Builder start = PutStart.newBuilder().setKey(key).setLayout(layout);
    for (long h : pageHashes) start.addPageHashes(h);
    return PutFrame.newBuilder().setStart(start).build();
  }

  static PutFrame rows(int layerId, int tokenStart, int rowCount, byte[] layer) {
    Tensor tensor = Tensor.newBuilder().setDtype(DType.DTYPE_BF16).addShape(rowCount).addShape(LATENT_DIM)
        .setData(ByteString.copyFrom(layer, tokenStart * ROW_BYTES, rowCount * ROW_BYTES)).build();
    return PutFrame.newBuilder().setLayer(LayerRows.newBuilder().setLayerId(layerId).setTokenStart(tokenStart).setRows(tensor)).build();
  }

  static PutFrame end() {
    return PutFrame.newBuilder().setEnd(PutEnd.getDefaultInstance()).build();
  }

  /** Layer frames chunk by chunk ({@code chunkTokens} tokens), every layer of a chunk before the next chunk. */
  static List<PutFrame> layerFrames(byte[][] layers, int numTokens, int chunkTokens) {
    List<PutFrame> frames = new ArrayList<>();
    for (int start = 0; start < numTokens; start += chunkTokens) {
      int rows = Math.min(chunkTokens, numTokens - start);
      for (int l = 0; l < layers.length; l++) frames.add(rows(l, start, rows, layers[l]));
    }
    return frames;
  }

  /** start, every layer frame, end. */
  static List<PutFrame> fullPut(String key, KvLayout layout, byte[][] layers, long... pageHashes) {
    List<PutFrame> frames = new ArrayList<>();
    frames.add(start(key, layout, pageHashes));
    frames.addAll(layerFrames(layers, layout.getNumTokens(), 16));
    frames.add(end());
    return frames;
  }
}
