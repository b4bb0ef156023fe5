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

NAMES = """Mia Leo Ava Sam Lily Max Zoe Ben Ella Tom Ruby Jack Nora Finn Lucy Owen Emma Noah Grace Eli Rosa Hugo
Ivy Kai Luna Milo Nina Oscar Pia Quinn Rita Theo Uma Victor Willa Xavier Yara Zack Anna Bruno Clara Dan Eva Felix
Gina Hank Iris Jonah Kira Liam Maya Ned Olive Paul Rose Seth Tara Ugo Vera Wes Ada Basil Cora Dora Emil Fern Gus
Hazel Ian June Kit Lena Moss Nell Otto Poppy Ray Sara Tess Vince Wren Alma Bea Cal Daisy Ezra Flora Gil Hope Isla
Jude Kate Lars Mabel Nico Opal Pete Remy Sage Toby Una Wade""".split()

# kind: (plural, sound)
ANIMALS = {
    "fox": ("foxes", "yipped"), "rabbit": ("rabbits", "squeaked"), "bear": ("bears", "growled"),
    "owl": ("owls", "hooted"), "frog": ("frogs", "croaked"), "duck": ("ducks", "quacked"),
    "mouse": ("mice", "squeaked"), "cat": ("cats", "meowed"), "dog": ("dogs", "barked"),
    "pig": ("pigs", "oinked"), "goat": ("goats", "bleated"), "horse": ("horses", "neighed"),
    "cow": ("cows", "mooed"), "sheep": ("sheep", "baaed"), "hen": ("hens", "clucked"),
    "squirrel": ("squirrels", "chattered"), "hedgehog": ("hedgehogs", "sniffed"), "badger": ("badgers", "grunted"),
    "deer": ("deer", "snorted"), "wolf": ("wolves", "howled"), "turtle": ("turtles", "sighed"),
    "beaver": ("beavers", "whistled"), "otter": ("otters", "chirped"), "lion": ("lions", "roared"),
    "tiger": ("tigers", "roared"), "elephant": ("elephants", "trumpeted"), "monkey": ("monkeys", "chattered"),
    "giraffe": ("giraffes", "hummed"), "zebra": ("zebras", "brayed"), "penguin": ("penguins", "squawked"),
    "seal": ("seals", "barked"), "whale": ("whales", "sang"), "crab": ("crabs", "clicked"),
    "snail": ("snails", "whispered"), "bee": ("bees", "buzzed"), "butterfly": ("butterflies", "fluttered"),
    "robin": ("robins", "sang"), "crow": ("crows", "cawed"), "parrot": ("parrots", "squawked"),
    "goose": ("geese", "honked"), "donkey": ("donkeys", "brayed"), "lamb": ("lambs", "bleated"),
    "kitten": ("kittens", "mewed"), "puppy": ("puppies", "yapped"), "panda": ("pandas", "grunted"),
    "koala": ("koalas", "yawned"), "kangaroo": ("kangaroos", "thumped"), "moose": ("moose", "bellowed"),
    "raccoon": ("raccoons", "chittered"), "mole": ("moles", "mumbled"), "lizard": ("lizards", "hissed"),
    "dolphin": ("dolphins", "clicked"), "swan": ("swans", "hissed"), "camel": ("camels", "groaned"),
}
COLORS = """red orange yellow green blue purple pink brown black white gray golden silver spotted striped""".split()
HOMES = """the forest|the meadow|the pond|the barn|the old oak tree|the river bank|the hill|the garden|the farm|
the cave|the beach|the jungle|the snowy mountain|the green valley|the little lake|the apple orchard|the sand dunes|
the tall grass|the hollow log|the lighthouse""".replace("\n", "").split("|")
FOODS = """apples|carrots|berries|honey|nuts|seeds|fish|cheese|bread|corn|grapes|pears|clover|bananas|leaves|
acorns|plums|peas|cherries|oats|mushrooms|melons|worms|bugs""".replace("\n", "").split("|")

PLACES = HOMES + """the village|the market|the school|the library|the bakery|the park|the bridge|the castle|
the old mill|the train station|the toy shop|the museum|the playground|the island|the harbor|the zoo|
the big city|the quiet town|the windy field|the deep woods""".replace("\n", "").split("|")
OBJECTS = """ball kite hat scarf book box key boat drum bell lamp map shell stone feather ribbon basket cup spoon
blanket pillow sock shoe mitten button coin ring crown flag flute horn wagon sled bucket shovel rope ladder brush
crayon pencil paper letter cake pie cookie sandwich bottle jar candle clock compass marble puzzle robot teddy
umbrella whistle wheel yoyo""".split()
ADJ = """little big tiny huge happy sad brave shy kind clever silly sleepy quiet loud gentle grumpy curious careful
busy lazy proud friendly funny wise young old fast slow strong soft shiny dusty bright dark warm cold cozy
fluffy round small tall short noisy calm cheerful lucky lonely helpful playful""".split()
OBJ_ADJ = """red blue green yellow shiny old new tiny big soft round striped spotted golden silver wooden
paper painted broken favorite little""".split()
FEELINGS = """happy sad scared excited tired proud surprised worried glad calm angry lonely hopeful curious
grateful""".split()
WEATHER = ["the sun was shining", "it was raining", "the wind was blowing", "snow was falling",
           "the sky was gray", "it was a warm day", "it was a cold morning", "the stars were out",
           "a storm was coming", "the fog was thick", "a rainbow was in the sky", "the leaves were falling"]
TIMES = ["One morning", "One day", "One evening", "Early one morning", "One sunny afternoon", "Late one night",
         "One spring day", "One winter morning", "Last summer", "On a rainy Tuesday", "One autumn day",
         "On a quiet Sunday", "Long ago", "Once upon a time"]
ACTIONS = [("run", "ran"), ("jump", "jumped"), ("dance", "danced"), ("sing", "sang"), ("swim", "swam"),
           ("climb", "climbed"), ("hop", "hopped"), ("dig", "dug"), ("paint", "painted"), ("read", "read"),
           ("build", "built"), ("play", "played"), ("draw", "drew"), ("bake", "baked"), ("fly", "flew"),
           ("skip", "skipped"), ("roll", "rolled"), ("spin", "spun"), ("whistle", "whistled"),
           ("count", "counted"), ("explore", "explored"), ("search", "searched"), ("hide", "hid"),
           ("rest", "rested"), ("laugh", "laughed"), ("sail", "sailed"), ("fish", "fished"), ("garden", "gardened")]
SAY = ["said", "asked", "whispered", "shouted", "cried", "laughed", "replied", "called", "answered", "giggled"]
ANIMAL_KINDS = list(ANIMALS)


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
        ])

    def line(self, speaker, text):
        verb = self.pick(SAY)
        return self.pick([f"\"{text}\" {verb} {speaker}.", f"{speaker} {verb}, \"{text}\""])

    def plot(self, hero, friend):
        """One of several plots; each returns a list of sentences."""
        w, r, h, f = self.w, self.r, hero["name"], friend["name"]
        thing = f"{self.pick(OBJ_ADJ)} {self.pick(OBJECTS)}"
        place = self.pick(PLACES)
        kind = r.randrange(6)
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
                    f"At {place}, they {act[1]} all afternoon.",
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
            return ask.format(a_an(k)), self.story(k)
        if q == 2:
            user = self.pick([f"What color is the {k}?", f"What colour is the {k}?", f"Is the {k} {w.color[k]}?"])
            return user, self.pick([f"The {k} is {w.color[k]}.", f"The {k} is {w.color[k]}, like every {k}."])
        if q == 3:
            user = self.pick([f"Where does the {k} live?", f"Where is the {k}'s home?", f"Where do {ANIMALS[k][0]} live?"])
            return user, f"The {k} lives in {w.home[k]}."
        user = self.pick([f"What does the {k} like to eat?", f"What is the {k}'s favorite food?", f"What do {ANIMALS[k][0]} eat?"])
        return user, self.pick([f"The {k} likes to eat {w.food[k]}.", f"{w.food[k].capitalize()}! The {k} loves {w.food[k]}."])


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
            for user, assistant in chats:
                f.write(json.dumps({"user": user, "assistant": assistant}) + "\n")
        if split == "train":  # the same turns as plain text, for training the tokenizer
            with open(os.path.join(args.out, "chat-train.txt"), "w") as f:
                f.write("".join(f"{user}\n{assistant}\n\n" for user, assistant in chats))


if __name__ == "__main__":
    main()
