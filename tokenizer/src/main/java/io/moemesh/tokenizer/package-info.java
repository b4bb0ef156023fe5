/**
 * Text to token ids and back, for the two places that see text: the gateway and the command line.
 *
 * <ul>
 *   <li>{@link io.moemesh.tokenizer.Tokenizer}: a model directory's {@code tokenizer.json} and
 *       {@code tokenizer_config.json}, run by Hugging Face {@code tokenizers} through DJL's native library.
 *   <li>{@link io.moemesh.tokenizer.ChatTemplate} (Jinja, through Jinjava) and {@link io.moemesh.tokenizer.ChatEncoder}:
 *       chat messages to prompt ids; {@link io.moemesh.tokenizer.IncrementalDetokenizer}: streamed ids to text.
 *   <li>{@link io.moemesh.tokenizer.TokenizerFiles} and {@link io.moemesh.tokenizer.BpeTrainer}: the byte-level BPE
 *       tokenizer of the demo models, learned from the bundled corpus; {@code TokenizerFiles::write} is what the
 *       model's {@code DemoCheckpoint} takes as its {@code TokenizerWriter}.
 * </ul>
 *
 * <p>A module of its own so that the engines and the services other than the gateway, which run on ids, carry
 * neither DJL's native library nor Jinjava: the parent POM's {@code tokenizer-free} rule fails their build if this
 * module, DJL or Jinjava reaches their runtime classpath.
 */
package io.moemesh.tokenizer;
