"""The volee daemon: validate -> append -> apply -> notify, and the runners around it."""
