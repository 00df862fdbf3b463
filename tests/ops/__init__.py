"""Operations: import/export, transfer, ship."""
