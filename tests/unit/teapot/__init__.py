"""A door defined outside the package (``door.DOOR``): one package plus its line in a table
the test supplies (tests/unit/test_door_table.py); no file of smserve's is edited for it."""
