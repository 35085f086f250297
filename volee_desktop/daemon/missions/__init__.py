"""The missions room owns work and its delivery: missions and their runner, messages between
agents and the person, approval (one dialog, judged from git evidence), what an agent changed,
its transcript and outcome, review (merge, discard) and tidying after.  It imports the kernel
and the agents room."""
