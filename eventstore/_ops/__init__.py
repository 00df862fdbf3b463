"""Operations over whole journals: verify and replay, import and export, ship, witnesses, audit."""
