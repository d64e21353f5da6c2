print("gen")
