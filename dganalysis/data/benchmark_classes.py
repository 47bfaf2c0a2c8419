"""The class folders of DomainBed's image benchmarks, each with where it was verified.

DomainBed (Gulrajani & Lopez-Paz, 2021) does not list classes: its ``MultipleEnvironmentImageFolder`` takes each
environment's sub-folders, sorted, as the classes. These lists are what its download script leaves on disk, checked
against public sources (repository + path below); :mod:`dganalysis.data.benchmarks` compares a user's tree with
them. Strict lists were confirmed by at least one public listing of the real folder names, and a tree whose class
folders differ is refused; lenient ones (SVIRO's) could not be confirmed for the archive DomainBed downloads, and a
difference is only logged as a warning (listing it), never refused. Every list is kept sorted as Python's ``sorted``
orders folder names (upper case first), which is the label order DomainBed trains with.
"""

from __future__ import annotations

#: PACS (Li et al. 2017): verified in thuml/Transfer-Learning-Library tllib/vision/datasets/pacs.py (``CLASSES``;
#: same ``dog`` … ``person`` folders as DomainBed's ``kfold`` archive).
PACS = ("dog", "elephant", "giraffe", "guitar", "horse", "house", "person")

#: VLCS (Fang et al. 2013): verified in muse1998/Source-Free-Domain-Generalization image_list/VLCS/{Caltech101,
#: LabelMe,SUN09,VOC2007}.txt, file lists of DomainBed's ``VLCS.tar.gz`` layout (``SUN09/car/<hash>.jpg``): each of
#: the four environment folders holds exactly these five class folders.
VLCS = ("bird", "car", "chair", "dog", "person")

#: OfficeHome (Venkateswara et al. 2017), 65 classes: verified in thuml/Transfer-Learning-Library
#: tllib/vision/datasets/officehome.py (``CLASSES``: the same 65 names); other public loaders found by a code search
#: spell them the same (``Alarm_Clock``, ``Exit_Sign``, ``Postit_Notes``, ``Push_Pin``, ``ToothBrush``, ``TV``).
#: The environment folder is ``Real World`` (with a space) in the archive DomainBed unpacks
#: (``OfficeHomeDataset_10072016``), as many public loaders spell it.
OFFICE_HOME = tuple((
    "Alarm_Clock Backpack Batteries Bed Bike Bottle Bucket Calculator Calendar Candles Chair Clipboards Computer "
    "Couch Curtains Desk_Lamp Drill Eraser Exit_Sign Fan File_Cabinet Flipflops Flowers Folder Fork Glasses "
    "Hammer Helmet Kettle Keyboard Knives Lamp_Shade Laptop Marker Monitor Mop Mouse Mug Notebook Oven Pan "
    "Paper_Clip Pen Pencil Postit_Notes Printer Push_Pin Radio Refrigerator Ruler Scissors Screwdriver Shelf Sink "
    "Sneakers Soda Speaker Spoon TV Table Telephone ToothBrush Toys Trash_Can Webcam "
).split())

#: TerraIncognita (Beery et al. 2018): DomainBed's own ``scripts/download.py`` (``include_categories``) creates
#: exactly these folders. (Trees prepared otherwise may differ: the file lists of
#: muse1998/Source-Free-Domain-Generalization image_list/Terra/ name the ``empty`` class ``landscape``; such a tree
#: is refused with both names in the message — rename the folder to ``empty``, the label order is the same.)
TERRA_INCOGNITA = ("bird", "bobcat", "cat", "coyote", "dog", "empty", "opossum", "rabbit", "raccoon", "squirrel")

#: DomainNet (Peng et al. 2019), 345 classes with their real spellings (``The_Eiffel_Tower``, ``teddy-bear``,
#: ``t-shirt``): verified in thuml/Transfer-Learning-Library tllib/vision/datasets/domainnet.py (``CLASSES``) and
#: tensorflow/datasets tensorflow_datasets/image_classification/domainnet/domainnet.py (``_CLASS_NAMES``); 329 of the
#: 345 also appear as folders in DomainBed's own domainbed/misc/domain_net_duplicates.txt.
DOMAIN_NET = tuple((
    "The_Eiffel_Tower The_Great_Wall_of_China The_Mona_Lisa aircraft_carrier airplane alarm_clock ambulance angel "
    "animal_migration ant anvil apple arm asparagus axe backpack banana bandage barn baseball baseball_bat basket "
    "basketball bat bathtub beach bear beard bed bee belt bench bicycle binoculars bird birthday_cake blackberry "
    "blueberry book boomerang bottlecap bowtie bracelet brain bread bridge broccoli broom bucket bulldozer bus "
    "bush butterfly cactus cake calculator calendar camel camera camouflage campfire candle cannon canoe car "
    "carrot castle cat ceiling_fan cell_phone cello chair chandelier church circle clarinet clock cloud "
    "coffee_cup compass computer cookie cooler couch cow crab crayon crocodile crown cruise_ship cup diamond "
    "dishwasher diving_board dog dolphin donut door dragon dresser drill drums duck dumbbell ear elbow elephant "
    "envelope eraser eye eyeglasses face fan feather fence finger fire_hydrant fireplace firetruck fish flamingo "
    "flashlight flip_flops floor_lamp flower flying_saucer foot fork frog frying_pan garden garden_hose giraffe "
    "goatee golf_club grapes grass guitar hamburger hammer hand harp hat headphones hedgehog helicopter helmet "
    "hexagon hockey_puck hockey_stick horse hospital hot_air_balloon hot_dog hot_tub hourglass house house_plant "
    "hurricane ice_cream jacket jail kangaroo key keyboard knee knife ladder lantern laptop leaf leg light_bulb "
    "lighter lighthouse lightning line lion lipstick lobster lollipop mailbox map marker matches megaphone "
    "mermaid microphone microwave monkey moon mosquito motorbike mountain mouse moustache mouth mug mushroom nail "
    "necklace nose ocean octagon octopus onion oven owl paint_can paintbrush palm_tree panda pants paper_clip "
    "parachute parrot passport peanut pear peas pencil penguin piano pickup_truck picture_frame pig pillow "
    "pineapple pizza pliers police_car pond pool popsicle postcard potato power_outlet purse rabbit raccoon radio "
    "rain rainbow rake remote_control rhinoceros rifle river roller_coaster rollerskates sailboat sandwich saw "
    "saxophone school_bus scissors scorpion screwdriver sea_turtle see_saw shark sheep shoe shorts shovel sink "
    "skateboard skull skyscraper sleeping_bag smiley_face snail snake snorkel snowflake snowman soccer_ball sock "
    "speedboat spider spoon spreadsheet square squiggle squirrel stairs star steak stereo stethoscope stitches "
    "stop_sign stove strawberry streetlight string_bean submarine suitcase sun swan sweater swing_set sword "
    "syringe t-shirt table teapot teddy-bear telephone television tennis_racquet tent tiger toaster toe toilet "
    "tooth toothbrush toothpaste tornado tractor traffic_light train tree triangle trombone truck trumpet "
    "umbrella underwear van vase violin washing_machine watermelon waterslide whale wheel windmill wine_bottle "
    "wine_glass wristwatch yoga zebra zigzag "
).split())

#: SVIRO (Dias Da Cruz et al. 2020), 7 classes: the SVIRO site's data-format page
#: (https://sviro.kl.dfki.de/data-format/) documents its classification download as one folder per class label
#: ``0`` … ``6`` (empty seat, infant seat, child seat, adult, everyday object, empty infant seat, empty child seat).
#: DomainBed downloads a special archive (``SVIRO_DOMAINBED``) whose layout no public source shows, so the names are
#: checked leniently (the count, 7, is DomainBed's).
SVIRO = tuple(str(k) for k in range(7))
