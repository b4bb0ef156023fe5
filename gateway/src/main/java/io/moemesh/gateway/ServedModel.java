package io.moemesh.gateway;

import io.moemesh.model.ModelConfig;
import io.moemesh.model.ModelConfigReader;
import io.moemesh.tokenizer.ChatTemplate;
import io.moemesh.tokenizer.Tokenizer;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** The model this gateway serves: its id, context length, tokenizer and chat template, loaded once at startup. */
@Singleton
public class ServedModel {
  private final String id;
  private final Set<String> acceptedNames;
  private final int contextLength;
  private final Tokenizer tokenizer;
  private final Optional<ChatTemplate> chatTemplate;
  private final long created = System.currentTimeMillis() / 1000;

  @Inject
  ServedModel(GatewayConfig config) {
    this(config.modelDir(), config.servedModelName());
  }

  ServedModel(Path modelDir, Optional<String> servedName) {
    Path dir = modelDir.toAbsolutePath().normalize();
    ModelConfig modelConfig = ModelConfigReader.read(dir.resolve("config.json"));
    String dirName = dir.getFileName().toString();
    this.id = servedName.orElse(dirName);
    this.acceptedNames = Set.copyOf(List.of(id, dirName)); // the two are the same without served-model-name
    this.contextLength = modelConfig.maxPositionEmbeddings();
    this.tokenizer = Tokenizer.load(dir);
    this.chatTemplate = tokenizer.chatTemplate();
  }

  /** The served id, as responses and {@code /v1/models} spell it. */
  public String id() {
    return id;
  }

  /** Whether a request's {@code model} names this model (its served id or its directory's name). */
  public boolean accepts(String model) {
    return acceptedNames.contains(model);
  }

  /** Prompt plus completion tokens must fit in this ({@code max_position_embeddings}). */
  public int contextLength() {
    return contextLength;
  }

  public Tokenizer tokenizer() {
    return tokenizer;
  }

  public Optional<ChatTemplate> chatTemplate() {
    return chatTemplate;
  }

  public long created() {
    return created;
  }

  @PreDestroy
  void close() {
    tokenizer.close();
  }
}
