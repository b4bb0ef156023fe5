package io.moemesh.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.moemesh.bench.ChatAccuracy.Task;
import io.moemesh.cli.DemoModels;
import io.moemesh.kernels.NativeKernels;
import io.moemesh.kernels.TensorArena;
import io.moemesh.model.DeepseekModel;
import io.moemesh.model.Precision;
import io.moemesh.tokenizer.ChatEncoder;
import io.moemesh.tokenizer.ChatMessage;
import io.moemesh.tokenizer.Tokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChatAccuracyTest {
  @Test
  void aStoryIsJudgedOnItsFirstSentenceAndAFactAnywhereAsAWholeWord() {
    assertTrue(Task.STORY.judge("Once upon a time, there was a brave fox named Mia. Mia met an owl.", "fox"));
    assertFalse(Task.STORY.judge("Once upon a time, there was an owl named Mia. Mia met a fox.", "fox"), "the fox only comes later");
    assertFalse(Task.STORY.judge("There once was a foxglove called Mia.", "fox"), "a word, not a prefix");
    assertTrue(Task.COLOR.judge("The fox is Yellow, like every fox.", "yellow"));
    assertTrue(Task.HOME.judge("The fox lives in the old oak tree.", "the old oak tree"));
    assertFalse(Task.HOME.judge("The fox lives in the old oak.", "the old oak tree"));
    assertFalse(Task.FOOD.judge("", "apples"));
    assertEquals("Hi there!", ChatAccuracy.firstSentence("Hi there! Bye."));
    assertEquals("no end", ChatAccuracy.firstSentence("no end"));
  }

  @Test
  void turnsAreReadWithTheirTaskAndABadLineIsNamed(@TempDir Path dir) throws Exception {
    assertEquals(List.of(), ChatAccuracy.turns(dir), "a model without the file has no turns");
    Files.writeString(dir.resolve(ChatAccuracy.FILE), """
        {"user": "What color is the fox?", "assistant": "The fox is yellow.", "task": "color", "expect": "yellow"}

        {"user": "Tell me a story about an owl.", "assistant": "…", "task": "story", "expect": "owl"}
        """);
    assertEquals(List.of(new ChatAccuracy.Turn("What color is the fox?", Task.COLOR, "yellow"),
        new ChatAccuracy.Turn("Tell me a story about an owl.", Task.STORY, "owl")), ChatAccuracy.turns(dir));

    Files.writeString(dir.resolve(ChatAccuracy.FILE), "{\"user\": \"Hi\", \"task\": \"color\"}\n");
    var e = assertThrows(IllegalArgumentException.class, () -> ChatAccuracy.turns(dir));
    assertTrue(e.getMessage().contains("needs user, task and expect"), e.getMessage());
    Files.writeString(dir.resolve(ChatAccuracy.FILE), "{\"user\": \"Hi\", \"task\": \"weather\", \"expect\": \"rain\"}\n");
    e = assertThrows(IllegalArgumentException.class, () -> ChatAccuracy.turns(dir));
    assertTrue(e.getMessage().contains("task 'weather' is not one of"), e.getMessage());
  }

  @Test
  void theDemoModelsHeldOutTurnsAreScoredFromItsOwnGreedyAnswers() throws Exception {
    Path dir = DemoModels.ensure(DemoModels.DEFAULT);
    List<ChatAccuracy.Turn> turns = ChatAccuracy.turns(dir);
    assertTrue(turns.size() >= 100, "the demo model ships its held-out chat turns: " + turns.size());
    List<ChatAccuracy.Turn> some = List.of(turns.stream().filter(t -> t.task() == Task.STORY).findFirst().orElseThrow(),
        turns.stream().filter(t -> t.task() == Task.FOOD).findFirst().orElseThrow());
    try (var kernels = NativeKernels.create(2); Tokenizer tokenizer = Tokenizer.load(dir);
        DeepseekModel model = DeepseekModel.load(dir, Precision.EXACT, kernels, null);
        TensorArena scratch = TensorArena.workspace()) {
      ChatAccuracy.Score score = ChatAccuracy.score(model, tokenizer, some);
      assertEquals(1, score.asked(Task.STORY));
      assertEquals(1, score.factsAsked());

      int[] prompt = ChatEncoder.encode(tokenizer, tokenizer.chatTemplate().orElseThrow(),
          List.of(ChatMessage.user(some.get(0).user())), true, ChatEncoder.SpecialTokens.TEXT);
      String sentence = ChatAccuracy.answer(model, tokenizer, prompt, true, scratch);
      assertFalse(sentence.isBlank());
      assertEquals(ChatAccuracy.firstSentence(sentence), sentence, "a story's answer stops at its first sentence end");
      assertEquals(score.rate(Task.STORY) == 1.0, Task.STORY.judge(sentence, some.get(0).expect()), "the score is that answer's verdict");
    }
  }
}
