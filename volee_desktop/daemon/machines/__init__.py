"""The machines room owns the other machines a person added: their records (add, list,
remove) and the link to each one's ``volee bridge`` over ssh (or any command), kept up and
forwarded to.  It imports only the kernel."""
