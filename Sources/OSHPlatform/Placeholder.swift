import OSHCore
