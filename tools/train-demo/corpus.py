#!/usr/bin/python3
"""Seeded generator of simple English for the demo model: children's-book stories and chat pairs.

The world is drawn once from the seed: every animal kind has one colour, one home and one favourite food, and
every story and every answer states those same facts, so "What color is the fox?" has one right answer that
the model can learn. Stories are assembled from interchangeable sentence templates (openings, events,
dialogue, endings) over word lists, so the text varies far more than it could be memorised.

  corpus.py --seed 1 --out build/ [--stories 20000 --chats 12000]
writes train.txt and heldout.txt (stories separated by blank lines) and chat-train.jsonl, chat-heldout.jsonl
({"user": ..., "assistant": ...} per line), and chat-train.txt (the training turns as plain text, for the
tokenizer). The held-out split uses its own random stream.
"""
import argparse
import json
import os
import random
from typing import NamedTuple

from words import (ACTIONS, ADJ, ADVERBS, ANIMALS, ANIMAL_KINDS, CLOTHES, COLORS, FEELINGS, FLOWERS, FOODS, GAMES,
                   HOMES, INSTRUMENTS, JOBS, LESSONS, NAMES, NATURE, OBJECTS, OBJ_ADJ, PLACES, SAY, SNACKS, SOUNDS,
                   TIMES, TOOLS, TREES, VEGETABLES, WEATHER)


class Turn(NamedTuple):
    """A chat turn, and what a right answer must contain: the asked-for animal (task "story", in the story's first
    sentence) or the world's fact (tasks "color", "home", "food")."""
    user: str
    assistant: str
    task: str
    expect: str


class World:
    """The fixed facts: each animal's colour, home and food, drawn from the seed."""

    def __init__(self, seed):
        r = random.Random(seed * 7919 + 1)
        self.color = {a: r.choice(COLORS) for a in ANIMAL_KINDS}
        self.home = {a: r.choice(HOMES) for a in ANIMAL_KINDS}
        self.food = {a: r.choice(FOODS) for a in ANIMAL_KINDS}


def a_an(word):
    return ("an " if word[0] in "aeiou" else "a ") + word


class Teller:
    """Builds one story at a time from templates; every choice comes from one random.Random."""

    def __init__(self, world, r):
        self.w, self.r = world, r

    def pick(self, xs):
        return self.r.choice(xs)

    def character(self, kind=None):
        kind = kind or self.pick(ANIMAL_KINDS)
        return {"name": self.pick(NAMES), "kind": kind, "adj": self.pick(ADJ)}

    def intro(self, c):
        w, k = self.w, c["kind"]
        return self.pick([
            f"Once upon a time, there was {a_an(c['adj'])} {w.color[k]} {k} named {c['name']}.",
            f"{c['name']} was {a_an(c['adj'])} {k} who lived in {w.home[k]}.",
            f"Near {w.home[k]} lived {a_an(w.color[k])} {k}. The {k} was called {c['name']}.",
            f"There once was {a_an(k)} called {c['name']}. {c['name']} was {w.color[k]} and very {c['adj']}.",
            f"{self.pick(TIMES)}, {a_an(c['adj'])} {k} named {c['name']} woke up in {w.home[k]}.",
        ])

    def detail(self, c):
        w, k, n = self.w, c["kind"], c["name"]
        return self.pick([
            f"{n} loved to eat {w.food[k]} more than anything.",
            f"Every day, {n} ate {w.food[k]} for breakfast.",
            f"{n} had {w.color[k]} fur and a {self.pick(['long', 'short', 'fluffy', 'thin'])} tail.",
            f"Like every {k}, {n} was {w.color[k]}.",
            f"{n} liked to {self.pick(ACTIONS)[0]} and to {self.pick(ACTIONS)[0]}.",
            f"All the {ANIMALS[k][0]} in {w.home[k]} knew {n}.",
            f"{n} was {self.pick(ADJ)}, but also a little {self.pick(ADJ)}.",
            f"{n} always wore {a_an(self.pick(OBJ_ADJ))} {self.pick(CLOTHES)}.",
            f"{n} liked to {self.pick(ACTIONS)[0]} {self.pick(ADVERBS)}, and to eat {self.pick(SNACKS)} after.",
            f"{n}'s best friend was the {self.pick(JOBS)}, who lived by the {self.pick(TREES)} tree.",
        ])

    def line(self, speaker, text):
        verb = self.pick(SAY)
        return self.pick([f"\"{text}\" {verb} {speaker}.", f"{speaker} {verb}, \"{text}\""])

    def plot(self, hero, friend):
        """One of several plots; each returns a list of sentences."""
        w, r, h, f = self.w, self.r, hero["name"], friend["name"]
        thing = f"{self.pick(OBJ_ADJ)} {self.pick(OBJECTS)}"
        place = self.pick(PLACES)
        kind = r.randrange(12)
        if kind >= 6:
            return self.outdoor_plots[kind - 6](hero, friend)
        if kind == 0:  # something lost and found
            return [f"{self.pick(TIMES)}, {h} could not find the {thing}.",
                    self.line(h, f"Where is my {thing}?"),
                    f"{h} looked under the bed and behind the door, but it was not there.",
                    f"Then {h} met {f} the {friend['kind']}.",
                    self.line(f, f"I saw it near {place}!"),
                    f"They went to {place} together, and there it was.",
                    self.line(h, f"Thank you, {f}! You are a good friend."),
                    f"{h} felt {self.pick(FEELINGS)}."]
        if kind == 1:  # a trip
            act = self.pick(ACTIONS)
            return [f"{self.pick(TIMES)}, {self.pick(WEATHER)}.",
                    f"{h} wanted to go to {place}.",
                    self.line(h, f"{f}, will you come with me?"),
                    self.line(f, self.pick(["Yes, let's go!", "Of course I will.", "Only if we bring snacks."])),
                    f"On the way, they saw {a_an(self.pick(ADJ))} {self.pick(ANIMAL_KINDS)} and {a_an(thing)}.",
                    f"At {place}, they {act[1]} {self.pick(ADVERBS)} all afternoon.",
                    f"When it got dark, they walked home, {self.pick(['tired', 'happy', 'sleepy', 'singing'])}."]
        if kind == 2:  # sharing food
            food = w.food[friend["kind"]]
            return [f"{f} the {friend['kind']} was very hungry.",
                    self.line(f, f"I wish I had some {food}."),
                    f"{h} had a basket of {food}.",
                    self.line(h, f"You can have some of mine, {f}."),
                    f"{f} was so {self.pick(['glad', 'happy', 'grateful'])} that {f} {ANIMALS[friend['kind']][1]}.",
                    f"From that day on, {h} and {f} shared everything."]
        if kind == 3:  # a fear overcome
            return [f"{h} was scared of {self.pick(['the dark', 'thunder', 'deep water', 'tall trees', 'big dogs', 'loud noises'])}.",
                    f"{self.pick(TIMES)}, {self.pick(WEATHER)}, and {h} hid in {w.home[hero['kind']]}.",
                    self.line(f, f"Do not be afraid, {h}. I am here."),
                    f"{f} held {h}'s paw and told a funny story about {a_an(self.pick(OBJECTS))}.",
                    f"Soon {h} was laughing.",
                    self.line(h, "I am not scared anymore!")]
        if kind == 4:  # making something
            act = self.pick(ACTIONS)
            return [f"{h} and {f} decided to make {a_an(thing)}.",
                    f"First they found some {self.pick(['sticks', 'paper', 'string', 'paint', 'leaves', 'glue'])}.",
                    f"Then they worked all {self.pick(['morning', 'day', 'afternoon', 'evening'])}.",
                    self.line(f, f"It looks {self.pick(['wonderful', 'funny', 'strange', 'perfect', 'a bit wobbly'])}!"),
                    f"When it was done, they took it to {place} to show everyone.",
                    f"Everyone wanted to {act[0]} with it."]
        # kind 5: a party
        return [f"It was {f}'s birthday.",
                f"{h} wanted to give {f} a present, so {h} made {a_an(thing)}.",
                f"All the animals came to {w.home[friend['kind']]} for the party.",
                f"There was a big cake and lots of {w.food[friend['kind']]}.",
                self.line(f, f"This is the best {thing} ever!"),
                f"They {self.pick(ACTIONS)[1]} and {self.pick(ACTIONS)[1]} until the moon came up."]

    @property
    def outdoor_plots(self):
        return [self.garden, self.music, self.lesson, self.mending, self.game, self.season]

    def garden(self, hero, friend):
        h, f, plant = hero["name"], friend["name"], self.pick(FLOWERS + VEGETABLES)
        return [f"{h} planted a row of {plant} in {self.pick(PLACES)}.",
                f"Every morning, {h} gave them water, and {f} pulled out the weeds.",
                f"{self.pick(TIMES)}, {self.pick(NATURE)}.",
                self.line(f, f"Look, {h}! The {plant} are growing!"),
                f"Soon there were {plant} everywhere, under the {self.pick(TREES)} tree and along the fence.",
                f"{h} gave a basket of {plant} to every {self.pick(JOBS)} in town."]

    def music(self, hero, friend):
        h, f = hero["name"], friend["name"]
        mine, theirs = self.pick(INSTRUMENTS), self.pick(INSTRUMENTS)
        return [f"{h} wanted to learn to play the {mine}.",
                f"At first it made {self.pick(SOUNDS)}, and {f} covered both ears.",
                self.line(f, f"Let me help. I can play the {theirs}."),
                f"They practised every {self.pick(['morning', 'evening', 'afternoon', 'weekend'])} at {self.pick(PLACES)}.",
                f"At the concert, {h} played the {mine} and {f} played the {theirs}.",
                f"Everyone clapped, and the {self.pick(JOBS)} said it was the best music of the year."]

    def lesson(self, hero, friend):
        h, f, topic = hero["name"], friend["name"], self.pick(LESSONS)
        teacher = self.character()
        return [f"At school, {teacher['name']} the {teacher['kind']} taught the class about {topic}.",
                f"{h} did not understand, and felt {self.pick(FEELINGS)}.",
                self.line(h, f"{f}, can you help me learn about {topic}?"),
                f"After class, {f} drew pictures of {topic} with a {self.pick(OBJ_ADJ)} pencil.",
                self.line(h, "Now I see!"),
                f"The next day, {h} told the whole class everything about {topic}."]

    def mending(self, hero, friend):
        h, f, thing = hero["name"], friend["name"], self.pick(OBJECTS)
        tool, other = self.pick(TOOLS), self.pick(TOOLS)
        return [f"{f}'s {thing} was broken, and {f} was {self.pick(FEELINGS)}.",
                self.line(h, f"Do not worry. I can fix it with some {tool}."),
                f"{h} fetched the {tool} and the {other} from {self.pick(PLACES)}.",
                f"It took a long time, and {self.pick(WEATHER)}.",
                f"At last the {thing} was as good as new.",
                self.line(f, f"You are the cleverest {hero['kind']} I know!")]

    def game(self, hero, friend):
        h, f, game = hero["name"], friend["name"], self.pick(GAMES)
        return [f"{h} and {f} played {game} near the {self.pick(TREES)} tree.",
                f"{f} was {self.pick(ADJ)}, but {h} was {self.pick(ADJ)}.",
                self.line(h, self.pick(["I win!", "Again, again!", "That was fun!", "Your turn now."])),
                f"Then {a_an(self.pick(ADJ))} {self.pick(ANIMAL_KINDS)} came to play too.",
                f"They played until {self.pick(NATURE)}."]

    def season(self, hero, friend):
        h, f = hero["name"], friend["name"]
        return [f"{self.pick(TIMES)}, {self.pick(WEATHER)}, and {self.pick(NATURE)}.",
                f"{h} and {f} packed {a_an(self.pick(OBJECTS))}, some {self.w.food[hero['kind']]} and some {self.pick(SNACKS)}.",
                f"They walked past the {self.pick(JOBS)}'s house and over the hill to {self.pick(PLACES)}.",
                f"There they heard {self.pick(SOUNDS)}.",
                self.line(f, "What was that?"),
                f"It was only {a_an(self.pick(ADJ))} {self.pick(ANIMAL_KINDS)} looking for {self.pick(FOODS)}."]

    def ending(self, hero):
        return self.pick(["The end.", f"And {hero['name']} never forgot that day.",
                          f"That night, {hero['name']} slept well in {self.w.home[hero['kind']]}.",
                          "It was a very good day.", f"{hero['name']} smiled. The end.",
                          "And they lived happily ever after."])

    def story(self, kind=None):
        hero, friend = self.character(kind), self.character()
        while friend["name"] == hero["name"]:
            friend = self.character()
        parts = [self.intro(hero)] + [self.detail(hero) for _ in range(self.r.randint(0, 2))]
        parts += self.plot(hero, friend) + [self.ending(hero)]
        return " ".join(parts)

    def chat(self):
        """A request for a story, or a question about the world's facts."""
        w, k = self.w, self.pick(ANIMAL_KINDS)
        q = self.r.randrange(5)
        if q == 0 or q == 1:
            ask = self.pick(["Tell me a story about {}.", "Can you tell me a story about {}?",
                             "Write a short story about {}.", "Please tell me a story about {}.",
                             "I want a story about {}.", "Tell me a bedtime story about {}."])
            return Turn(ask.format(a_an(k)), self.story(k), "story", k)
        if q == 2:
            user = self.pick([f"What color is the {k}?", f"What colour is the {k}?", f"Is the {k} {w.color[k]}?"])
            return Turn(user, self.pick([f"The {k} is {w.color[k]}.", f"The {k} is {w.color[k]}, like every {k}."]),
                        "color", w.color[k])
        if q == 3:
            user = self.pick([f"Where does the {k} live?", f"Where is the {k}'s home?", f"Where do {ANIMALS[k][0]} live?"])
            return Turn(user, f"The {k} lives in {w.home[k]}.", "home", w.home[k])
        user = self.pick([f"What does the {k} like to eat?", f"What is the {k}'s favorite food?", f"What do {ANIMALS[k][0]} eat?"])
        return Turn(user, self.pick([f"The {k} likes to eat {w.food[k]}.", f"{w.food[k].capitalize()}! The {k} loves {w.food[k]}."]),
                    "food", w.food[k])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stories", type=int, default=24000)
    ap.add_argument("--chats", type=int, default=16000)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    world = World(args.seed)
    for split, frac, offset in (("train", 1.0, 0), ("heldout", 0.02, 1)):
        teller = Teller(world, random.Random(args.seed * 1000003 + offset))
        name = "train.txt" if split == "train" else "heldout.txt"
        with open(os.path.join(args.out, name), "w") as f:
            f.write("\n\n".join(teller.story() for _ in range(int(args.stories * frac))) + "\n")
        chats = [teller.chat() for _ in range(int(args.chats * frac))]
        with open(os.path.join(args.out, f"chat-{split}.jsonl"), "w") as f:
            for turn in chats:
                f.write(json.dumps(turn._asdict()) + "\n")
        if split == "train":  # the same turns as plain text, for training the tokenizer
            with open(os.path.join(args.out, "chat-train.txt"), "w") as f:
                f.write("".join(f"{t.user}\n{t.assistant}\n\n" for t in chats))


if __name__ == "__main__":
    main()
