print("nbus")
