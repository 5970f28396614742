"""What the pytest plugin tells the gate about the test running now (no imports: the plugin sets it
around every test, whether or not the test uses larc)."""
current = {
    "nodeid": None,         # the running test's node id: its reproduce command
    "pytest": "pytest",     # the command that starts pytest with this plugin loaded the way it is now
    "rerun_options": "",    # the pytest options that bring its case back alone
    "save_dir": None,       # --larc-save
    "results": None,        # a list collecting every verdict reached in the test
    "shrink": None,         # --larc-shrink: candidates judged when shrinking a failure (None: the default)
    "replay_test": None,    # the running test's node id without its case, when it takes larc_case
}
