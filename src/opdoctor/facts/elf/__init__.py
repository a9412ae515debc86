"""ELF readers: the header and image (:mod:`.image`), dynamic symbols through the hash tables
(:mod:`.dynsym`) and C++ demangling (:mod:`.demangle`). Every extent is checked against the
file size before it is read."""
