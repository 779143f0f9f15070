"""Ordinal learners: the class codes read as grades (LODML / KODML, CMOML / KCMOML) and their shared
neighbourhoods."""
