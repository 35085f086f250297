"""The agents room owns every agent volee runs: the runner that spawns, stops and answers
them, their hosts (PTYs behind a socket), what their hooks and screens say (intake, screens,
answers, limits), their sessions and workspaces, recovery after a crash or a reboot, the
orphans a killed host leaves, and each agent's timeline.  It imports only the kernel."""
