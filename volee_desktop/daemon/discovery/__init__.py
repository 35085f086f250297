"""The discovery room owns finding the agents volee did not start: the loop that lists and
reconciles, the harnesses' listers, and the watches (inotify, a folder that appears later) that
say when to list again.  It imports only the kernel."""
