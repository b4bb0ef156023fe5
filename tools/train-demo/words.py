"""The corpus's word lists: who, what and where the demo model's stories are about (corpus.py draws from them).

A few thousand distinct words in all, so the tokenizer and the model see a real vocabulary; the animal kinds, colours,
homes and foods also make up the world's facts (corpus.World)."""

NAMES = """Mia Leo Ava Sam Lily Max Zoe Ben Ella Tom Ruby Jack Nora Finn Lucy Owen Emma Noah Grace Eli Rosa Hugo
Ivy Kai Luna Milo Nina Oscar Pia Quinn Rita Theo Uma Victor Willa Xavier Yara Zack Anna Bruno Clara Dan Eva Felix
Gina Hank Iris Jonah Kira Liam Maya Ned Olive Paul Rose Seth Tara Ugo Vera Wes Ada Basil Cora Dora Emil Fern Gus
Hazel Ian June Kit Lena Moss Nell Otto Poppy Ray Sara Tess Vince Wren Alma Bea Cal Daisy Ezra Flora Gil Hope Isla
Jude Kate Lars Mabel Nico Opal Pete Remy Sage Toby Una Wade
Abby Alfie Amos Arlo Aria Asher Astrid Audrey Axel Beau Bella Benji Bianca Billie Blake Bonnie Brooke Caleb Carmen
Cecil Celia Chloe Clem Colin Daphne Darcy Della Dexter Dinah Edgar Edith Elsa Elmer Elsie Enzo Esme Ethan Evie Fay
Fiona Frank Freya Gemma George Greta Hal Hattie Heidi Henry Holly Ingrid Ira Isaac Jade Jasper Jay Jenny Joel Josie
Jules Kay Keith Kenji Kim Lara Leah Lenny Lewis Lola Lottie Lou Mae Marco Margo Mark Martha Matt Millie Minnie Molly
Myles Nadia Nate Nia Odette Ola Oren Otis Pablo Penny Percy Phoebe Pip Polly Priya Rafe Rex Rhea Rico Robin Rory
Ruth Sadie Sally Selma Sid Simon Sofia Stella Sunny Susie Tad Tilly Tina Todd Trixie Val Vic Vivi Walt Wendy Will
Winnie Yuri Yusuf Zara Zelda Ziggy Alba Arthur Bertie Bram Cass Cyril Dottie Edna Elias Fritz Gwen Harriet Hector
Inez Jasmine Juno Kasper Lionel Lulu Magnus Marigold Mungo Nettie Orla Perry Quentin Roscoe Rufus Scout Sylvie Thea
Ulla Vance Wally Xena Yvette Zeno""".split()

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
the big city|the quiet town|the windy field|the deep woods|the post office|the fire station|the
farmhouse|the orchard gate|the stone wall|the swimming pool|the ice rink|the fairground|the circus|the cinema|
the bus stop|the town square|the fountain|the duck pond|the waterfall|the old well|the tree house|the greenhouse|
the bandstand|the pier|the boathouse|the bookshop|the candy shop|the hospital|the post box|the campsite|
the riverside path|the rocky shore|the pine wood|the sunflower field|the strawberry patch|the windmill|the attic|
the cellar|the kitchen|the treetops""".replace("\n", "").split("|")
OBJECTS = """ball kite hat scarf book box key boat drum bell lamp map shell stone feather ribbon basket cup spoon
blanket pillow sock shoe mitten button coin ring crown flag flute horn wagon sled bucket shovel rope ladder brush
crayon pencil paper letter cake pie cookie sandwich bottle jar candle clock compass marble puzzle robot teddy
umbrella whistle wheel yoyo
apron backpack badge balloon banner barrel bench blocks bowl bracelet bridge broom brooch bubble cabin camera canoe
cap cart castle chair chalk chest cloak comb cushion diary dollhouse doorbell envelope fan fence fiddle flashlight
fork frame glove goggles guitar hammer hammock harp helmet hoop jacket jigsaw kettle ladle lantern leash locket
lunchbox magnet mask medal mirror mug napkin necklace net notebook oar paddle paintbrush pan parcel pebble pendant
photo piano picnic pinwheel pipe pitcher plate pocket poster pot pouch pram purse quilt raft rake rattle saddle
satchel saucer scooter seesaw shawl shelf shield skate skipping slate slipper spade sponge stool suitcase sweater
swing sword table tambourine teapot telescope tent thimble ticket tin torch towel tray tricycle trumpet trunk
tuba vase violin wand watch watering-can windmill xylophone""".split()
ADJ = """little big tiny huge happy sad brave shy kind clever silly sleepy quiet loud gentle grumpy curious careful
busy lazy proud friendly funny wise young old fast slow strong soft shiny dusty bright dark warm cold cozy
fluffy round small tall short noisy calm cheerful lucky lonely helpful playful
adventurous bashful bold bouncy bubbly chatty cheeky chubby clumsy daring dainty dreamy eager fearless fidgety fierce
fuzzy giggly glowing graceful greedy hairy handsome hasty honest humble hungry jolly jumpy lively loyal merry mighty
mischievous modest nervous nimble patient peaceful plump polite precious quick rosy rusty scruffy secret sensible
serious sharp shaggy skinny sleek smart sneaky sparkly speedy spotty sprightly stubborn sturdy sunny sweet swift
thoughtful thirsty timid tough tricky trusty wiggly wobbly woolly zippy""".split()
OBJ_ADJ = """red blue green yellow shiny old new tiny big soft round striped spotted golden silver wooden
paper painted broken favorite little
purple pink orange brown black white bumpy bouncy cracked dented fancy fuzzy glittery heavy light lumpy muddy
plastic polished rusty sparkly squeaky sticky velvet wet woolen""".split()
FEELINGS = """happy sad scared excited tired proud surprised worried glad calm angry lonely hopeful curious
grateful
amazed annoyed bored brave cheerful confused cross delighted disappointed eager embarrassed frightened grumpy
jealous joyful nervous peaceful puzzled relieved shy silly sleepy sorry thankful thrilled upset""".split()
WEATHER = ["the sun was shining", "it was raining", "the wind was blowing", "snow was falling",
           "the sky was gray", "it was a warm day", "it was a cold morning", "the stars were out",
           "a storm was coming", "the fog was thick", "a rainbow was in the sky", "the leaves were falling",
           "the air smelled of rain", "a soft drizzle was falling", "the ice on the pond was thick",
           "thunder rumbled far away", "the morning was misty", "the afternoon was hot and sleepy"]
TIMES = ["One morning", "One day", "One evening", "Early one morning", "One sunny afternoon", "Late one night",
         "One spring day", "One winter morning", "Last summer", "On a rainy Tuesday", "One autumn day",
         "On a quiet Sunday", "Long ago", "Once upon a time", "One frosty morning", "One breezy evening", "At sunrise", "After lunch",
         "Just before bedtime", "On the first day of spring", "In the middle of the night"]
ACTIONS = [("run", "ran"), ("jump", "jumped"), ("dance", "danced"), ("sing", "sang"), ("swim", "swam"),
           ("climb", "climbed"), ("hop", "hopped"), ("dig", "dug"), ("paint", "painted"), ("read", "read"),
           ("build", "built"), ("play", "played"), ("draw", "drew"), ("bake", "baked"), ("fly", "flew"),
           ("skip", "skipped"), ("roll", "rolled"), ("spin", "spun"), ("whistle", "whistled"),
           ("count", "counted"), ("explore", "explored"), ("search", "searched"), ("hide", "hid"),
           ("rest", "rested"), ("laugh", "laughed"), ("sail", "sailed"), ("fish", "fished"), ("garden", "gardened"),
           ("skate", "skated"), ("sled", "sledded"), ("knit", "knitted"), ("sew", "sewed"), ("juggle", "juggled"),
           ("wander", "wandered"), ("splash", "splashed"), ("tumble", "tumbled"), ("march", "marched"),
           ("paddle", "paddled"), ("race", "raced"), ("glide", "glided"), ("wiggle", "wiggled"), ("cook", "cooked"),
           ("write", "wrote"), ("listen", "listened"), ("picnic", "picnicked"), ("stretch", "stretched"),
           ("twirl", "twirled"), ("bounce", "bounced"), ("gallop", "galloped"), ("nap", "napped"),
           ("plant", "planted"), ("sweep", "swept"), ("tidy", "tidied"), ("hum", "hummed"), ("clap", "clapped"),
           ("wade", "waded"), ("doodle", "doodled"), ("scribble", "scribbled"), ("giggle", "giggled")]
SAY = ["said", "asked", "whispered", "shouted", "cried", "laughed", "replied", "called", "answered", "giggled",
       "sighed", "grumbled", "chuckled", "exclaimed", "muttered", "sang", "yelled", "squealed"]
ANIMAL_KINDS = list(ANIMALS)

FLOWERS = """daisies roses tulips sunflowers poppies daffodils lilies violets bluebells buttercups pansies marigolds
lavender dandelions snowdrops orchids peonies irises crocuses primroses""".split()
VEGETABLES = """carrots beans peas pumpkins tomatoes potatoes onions radishes lettuce cabbages turnips beets cucumbers
peppers squash spinach leeks parsnips""".split()
TREES = """oak pine birch maple willow apple cherry elm beech chestnut palm fir cedar ash hazel""".split()
INSTRUMENTS = """drum flute fiddle trumpet piano harp guitar banjo bell horn tuba violin xylophone tambourine
whistle accordion cello harmonica ukulele trombone""".split()
TOOLS = """hammer nails saw glue tape string rope paint brush screwdriver ladder spade rake bucket needle thread
wrench scissors pliers sandpaper""".split()
LESSONS = """numbers letters colors shapes stars clouds rivers mountains rain snow seeds bees maps clocks boats
bridges volcanoes dinosaurs planets oceans weather seasons magnets bubbles rainbows""".split()
GAMES = """hide and seek|tag|hopscotch|leapfrog|catch|marbles|skipping rope|musical chairs|treasure hunt|
follow the leader|tug of war|dominoes|checkers|charades|snap""".replace("\n", "").split("|")
JOBS = """baker farmer teacher doctor painter builder sailor gardener fisherman postman tailor cook pilot nurse
librarian shopkeeper musician carpenter firefighter mayor""".split()
SOUNDS = """a soft rustle|a loud bang|a tiny squeak|a gentle tap|a strange hum|a sudden splash|a happy whistle|
a low rumble|a faint jingle|a quiet knock""".replace("\n", "").split("|")
NATURE = ["the grass was wet with dew", "the river sparkled in the sun", "the trees swayed in the breeze",
          "the birds sang in the branches", "the moon was round and bright", "the clouds looked like sheep",
          "the puddles shone like mirrors", "the flowers smelled sweet", "the hills were covered in snow",
          "the leaves crunched underfoot", "the waves rolled onto the sand", "the bees buzzed among the clover",
          "the frost made everything glitter", "the path was muddy and slippery"]
ADVERBS = """slowly quickly quietly loudly happily sadly gently carefully bravely proudly softly sleepily
cheerfully busily lazily nervously eagerly patiently politely playfully wisely boldly calmly clumsily
gracefully hungrily kindly merrily neatly noisily shyly smoothly swiftly tidily warmly wildly""".split()
CLOTHES = """hat scarf coat cap boots mittens sweater jacket dress shirt vest apron cloak raincoat bonnet beret
overalls pajamas sandals slippers socks shorts skirt bow tie ribbon crown sunhat wellies""".split()
SNACKS = """sandwiches muffins biscuits pancakes crackers pretzels cupcakes waffles jelly lemonade cocoa toast
porridge soup buns tarts scones dumplings noodles popcorn pudding custard""".split()
MORE_NAMES = """Agnes Albie Archie Barney Betty Bobbie Buster Cedric Charlie Cleo Coco Dewey Dot Duncan Dusty Effie
Elton Ernie Florence Frankie Gilbert Ginny Godfrey Goldie Gracie Gregor Harvey Herbie Honor Horace Ike Ivo Jem
Jerome Juniper Kip Lacey Lark Leopold Linus Mabry Maisie Mavis Merle Midge Monty Morris Muriel Nell Norbert
Obi Ollie Orson Pansy Patch Pearl Pepper Petra Pixie Plum Prue Reggie Rollo Rowan Rusty Sable Sonny Sorrel Spike
Sprout Stanley Sukie Tabby Tansy Tibbs Tobias Tubby Twig Vesper Virgil Winston Wilbur Wilma Wolfie Yarrow""".split()
NAMES = NAMES + [n for n in MORE_NAMES if n not in NAMES]
